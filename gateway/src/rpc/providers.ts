// Providers, minimal: named sets of environment values, each secret (credentials) or not
// (config). Secret values are stored only in the providers table and never returned; a change
// bumps provider_env_revision of every sandbox that attaches the provider.

import { randomUUID } from "node:crypto";
import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import type { CreateProviderRequest, Provider, ProviderResponse, UpdateProviderRequest } from "openshell-config/raw";
import { StoreConflictError, type ProviderRecord } from "../store/store.js";
import { toProvider } from "../model/convert.js";
import { assertWorkspace, requireAdmin, singleWorkspace } from "./access.js";
import type { GatewayDeps } from "./deps.js";

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function valuesOf(provider: Provider): ProviderRecord["values"] {
  const values: { name: string; value: string; secret: boolean }[] = [];
  for (const [name, value] of Object.entries(provider.credentials)) values.push({ name, value, secret: true });
  for (const [name, value] of Object.entries(provider.config)) {
    if (name in provider.credentials) throw new ConnectError(`provider.config["${name}"] is also a credential`, Code.InvalidArgument);
    values.push({ name, value, secret: false });
  }
  for (const v of values) {
    if (!ENV_NAME.test(v.name)) throw new ConnectError(`provider value name "${v.name}" is not an environment variable name`, Code.InvalidArgument);
  }
  return values;
}

function parse(req: CreateProviderRequest | UpdateProviderRequest, ctx: HandlerContext) {
  const p = requireAdmin(ctx);
  const provider = req.provider;
  const name = provider?.metadata?.name ?? "";
  if (!provider || name === "") throw new ConnectError("provider.metadata.name is required", Code.InvalidArgument);
  const workspace = singleWorkspace(req.workspaceScope);
  assertWorkspace(p, workspace, `provider "${name}"`);
  return { provider, name, workspace, values: valuesOf(provider) };
}

function response(record: ProviderRecord): ProviderResponse {
  return { $typeName: "openshell.v1.ProviderResponse", provider: toProvider(record) };
}

export async function createProvider(deps: GatewayDeps, req: CreateProviderRequest, ctx: HandlerContext): Promise<ProviderResponse> {
  const { provider, name, workspace, values } = parse(req, ctx);
  const record: ProviderRecord = {
    id: randomUUID(),
    workspace,
    name,
    type: provider.type,
    resourceVersion: 1n,
    values,
    createdAt: new Date(),
  };
  try {
    await deps.store.transaction((tx) => tx.insertProvider(record));
  } catch (err) {
    if (err instanceof StoreConflictError) throw new ConnectError(`provider "${name}" already exists`, Code.AlreadyExists);
    throw err;
  }
  deps.logger.info({ provider: name, workspace, values: values.length }, "provider created");
  return response(record);
}

export async function updateProvider(deps: GatewayDeps, req: UpdateProviderRequest, ctx: HandlerContext): Promise<ProviderResponse> {
  const { provider, name, workspace, values } = parse(req, ctx);
  const { record, sandboxes } = await deps.store.transaction(async (tx) => {
    const current = await tx.providerByName(workspace, name);
    if (!current) throw new ConnectError(`provider "${name}" not found`, Code.NotFound);
    const record = await tx.updateProvider(current.id, { type: provider.type || current.type, values });
    const attached = await tx.sandboxesWithProvider(workspace, name);
    for (const sb of attached) await tx.updateSandbox(sb.id, { providerEnvRevision: sb.providerEnvRevision + 1n });
    return { record, sandboxes: attached.length };
  });
  deps.publish();
  deps.logger.info({ provider: name, workspace, sandboxes }, "provider updated");
  return response(record);
}
