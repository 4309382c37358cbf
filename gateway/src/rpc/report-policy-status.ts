// ReportPolicyStatus: a polling supervisor (one without a ConnectSupervisor stream) reports
// whether it loaded a policy version of its own sandbox. It records the revision's status, load
// error and loaded time, and a loaded version as what the sandbox enforces; operations are not touched (a polling supervisor acknowledges no
// operation; streamed results go through delivery/results.ts).

import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import {
  ConfigApplyOutcome,
  PolicyEnforcementSchema,
  PolicyEnforcementState,
  PolicySource,
  PolicyStatus,
  ReportPolicyStatusResponseSchema,
  type ReportPolicyStatusRequest,
  type ReportPolicyStatusResponse,
} from "openshell-config/raw";
import { toEnforcementRecord } from "../model/enforcement.js";
import { sanitizeError } from "../operations/states.js";
import { principalOf } from "./access.js";
import type { GatewayDeps } from "./deps.js";
import { supervisorSandbox, supervisorScope } from "./supervisor-identity.js";

export async function reportPolicyStatus(deps: GatewayDeps, req: ReportPolicyStatusRequest, ctx: HandlerContext): Promise<ReportPolicyStatusResponse> {
  // Under --no-auth: for the sandbox the request names (supervisor-identity.ts).
  const scope = supervisorScope(principalOf(ctx), "ReportPolicyStatus");
  if (req.sandboxId === "") throw new ConnectError("sandbox_id is required", Code.InvalidArgument);
  if (req.version === 0) throw new ConnectError("version must be positive", Code.InvalidArgument);
  if (req.status !== PolicyStatus.LOADED && req.status !== PolicyStatus.FAILED) {
    throw new ConnectError("status must be POLICY_STATUS_LOADED or POLICY_STATUS_FAILED", Code.InvalidArgument);
  }
  // A supervisor speaks only for its own sandbox; any other is reported as not found.
  const sb = await supervisorSandbox(deps, scope, req.sandboxId);
  if (!sb) {
    throw new ConnectError(`sandbox "${req.sandboxId}" not found`, Code.NotFound);
  }
  const loaded = req.status === PolicyStatus.LOADED;
  const loadError = loaded ? "" : sanitizeError(req.loadError);
  await deps.store.transaction(async (tx) => {
    const rev = await tx.policyRevision(sb.id, req.version);
    if (!rev) throw new ConnectError(`policy version ${req.version} not found`, Code.NotFound);
    // A repeated report changes nothing (the first loaded time stays).
    if (rev.status === req.status && rev.loadError === loadError) return;
    await tx.setPolicyStatus(sb.id, req.version, req.status, loadError, loaded ? new Date() : undefined);
    // A loaded version is what the sandbox now enforces. A failed one leaves the previous policy
    // in force (PolicyStatus FAILED keeps the last known good), so the record stays as it was.
    if (loaded) {
      const enforced = create(PolicyEnforcementSchema, {
        state: PolicyEnforcementState.ENFORCING,
        policyVersion: req.version,
        policyHash: rev.hash,
        policySource: PolicySource.SANDBOX,
        reportedPolicyVersion: req.version,
        outcome: ConfigApplyOutcome.APPLIED,
      });
      await tx.putEnforcement(toEnforcementRecord(sb.id, enforced, new Date()));
    }
  });
  return create(ReportPolicyStatusResponseSchema);
}
