// Health: unauthenticated liveness plus the store's reachability.

import { ServiceStatus, type HealthResponse } from "openshell-config/raw";
import type { GatewayDeps } from "./deps.js";

export async function health(deps: GatewayDeps, version: string): Promise<HealthResponse> {
  let status = ServiceStatus.HEALTHY;
  try {
    await deps.store.countPending();
  } catch {
    status = ServiceStatus.UNHEALTHY;
  }
  return { $typeName: "openshell.v1.HealthResponse", status, version };
}
