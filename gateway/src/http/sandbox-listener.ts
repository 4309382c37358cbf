// What the sandbox listener (--sandbox-port) serves: only the calls a supervisor makes, as
// upstream keeps sandboxes on a listener of their own. Everything else there is refused with
// PERMISSION_DENIED naming the listener, before its body is read.

import { OpenShell } from "openshell-config/raw";

/** The supervisor's methods. */
const SUPERVISOR_METHODS = [OpenShell.method.connectSupervisor, OpenShell.method.getSandboxConfig, OpenShell.method.reportPolicyStatus, OpenShell.method.health];

/** Request paths (`/openshell.v1.OpenShell/ConnectSupervisor`, …) the sandbox listener serves. */
export const SANDBOX_LISTENER_PATHS: readonly string[] = SUPERVISOR_METHODS.map((m) => `/${OpenShell.typeName}/${m.name}`);

/** The PERMISSION_DENIED message for `path` on the sandbox listener. */
export function sandboxListenerRefusal(path: string, servedPaths: readonly string[]): string {
  const method = path.slice(path.lastIndexOf("/") + 1);
  const served = servedPaths.map((p) => p.slice(p.lastIndexOf("/") + 1)).join(", ");
  return `${method} is not served on the sandbox listener, which serves supervisors only (${served}); call the gateway's main port`;
}
