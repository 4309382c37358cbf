// The upstream `openshell` CLI's gateway registry, read-only (UPSTREAM.md §8): the user registry
// ($XDG_CONFIG_HOME/openshell) and the system one ($OPENSHELL_SYSTEM_GATEWAY_DIR or /etc/openshell),
// same layout. A user entry (its metadata.json exists) shadows the system entry of the same name;
// the user's `active_gateway` wins over the system's. Every read is bounded (file sizes, entries
// per directory) and every error names the file.
//
// Where an entry's credentials are: upstream writes mTLS bundles and OIDC tokens to the user
// registry even for a gateway whose metadata an installer put in the system registry, so a system
// entry's bundle (and token) is looked up in the user registry first, then beside the entry. A
// user entry's credentials are only ever its own: a user entry that shadows a system one may point
// at another server, which must not get the system entry's client certificate.

import { homedir } from "node:os";
import { kindOf, listDirectories, readBounded } from "./bounded-file.js";
import { ConfigError } from "./config-error.js";
import { MAX_METADATA_BYTES, parseGatewayMetadata, type GatewayMetadata } from "./registry-metadata.js";
import {
  gatewayDir,
  gatewayNameProblem,
  metadataFile,
  mtlsDir,
  oidcTokenFile,
  systemRegistryDir,
  userRegistryDir,
  type RegistrySource,
} from "./registry-paths.js";
import { join } from "node:path";

/** Entries read per `gateways/` directory; more are ignored (and `list` says so). */
export const MAX_ENTRIES = 1000;
/** The largest `active_gateway` file read. */
export const MAX_ACTIVE_BYTES = 1024;

/** A registered gateway. */
export interface RegistryEntry {
  readonly name: string;
  readonly source: RegistrySource;
  /** The metadata.json it was read from. */
  readonly metadataFile: string;
  readonly metadata: GatewayMetadata;
}

/** The active gateway's name and the `active_gateway` file that named it. */
export interface ActiveGateway {
  readonly name: string;
  readonly source: RegistrySource;
  readonly file: string;
}

export interface Registry {
  /** The user registry's root ($XDG_CONFIG_HOME/openshell). */
  readonly userDir: string;
  /** The system registry's root. */
  readonly systemDir: string;
  /** Why $OPENSHELL_SYSTEM_GATEWAY_DIR was ignored ("empty", "relative"), when it was. */
  readonly systemDirIgnored: string | undefined;
  /** The active gateway: the user's `active_gateway`, else the system's; undefined when neither names one. */
  active(): ActiveGateway | undefined;
  /** The entry called `name` (user first); undefined when neither registry has its metadata.json. */
  entry(name: string): RegistryEntry | undefined;
  /** Every entry, by name, a user entry shadowing the system one; what could not be read, in `problems`. */
  list(): { readonly entries: readonly RegistryEntry[]; readonly problems: readonly string[] };
  /** The names of every gateway directory (for "did you mean"). */
  names(): string[];
  /** The mTLS bundle directory of the gateway called `name` (registered as `entry`, if it is). */
  bundleDir(name: string, entry: RegistryEntry | undefined): string;
  /** Where the gateway's OIDC token is read from, and where a refreshed one is written. */
  oidcTokenFiles(entry: RegistryEntry): { readonly read: string; readonly write: string };
  /** The user registry's directory of the gateway (for files written there). */
  userGatewayDir(name: string): string;
}

/** Throws ConfigError when `name` is not a gateway name; `from` says where it came from. */
export function checkGatewayName(name: string, from: string): void {
  const problem = gatewayNameProblem(name);
  if (problem !== undefined) throw new ConfigError(`${from} is not a gateway name (one path component): ${problem}`);
}

export function createRegistry(env: NodeJS.ProcessEnv, home: string = homedir()): Registry {
  const userDir = userRegistryDir(env, home);
  const system = systemRegistryDir(env);
  const roots: readonly (readonly [RegistrySource, string])[] = [
    ["user", userDir],
    ["system", system.dir],
  ];

  const readEntry = (source: RegistrySource, root: string, name: string): RegistryEntry | undefined => {
    const file = metadataFile(root, name);
    const read = readBounded(file, MAX_METADATA_BYTES);
    if ("missing" in read) return undefined;
    if ("problem" in read) throw new ConfigError(`cannot read gateway metadata ${file}: ${read.problem}`);
    return { name, source, metadataFile: file, metadata: parseGatewayMetadata(read.text, file, name) };
  };

  const readActive = (source: RegistrySource, root: string): ActiveGateway | undefined => {
    const file = join(root, "active_gateway");
    const read = readBounded(file, MAX_ACTIVE_BYTES);
    if ("missing" in read) return undefined;
    if ("problem" in read) throw new ConfigError(`cannot read ${file}: ${read.problem}`);
    const name = read.text.trim();
    if (name === "") return undefined;
    checkGatewayName(name, `the active gateway in ${file}`);
    return { name, source, file };
  };

  const firstDirectory = (...dirs: string[]) => dirs.find((d) => kindOf(d) === "directory");

  return {
    userDir,
    systemDir: system.dir,
    systemDirIgnored: system.ignored,
    active: () => readActive("user", userDir) ?? readActive("system", system.dir),
    entry(name) {
      checkGatewayName(name, `"${name}"`);
      // A user metadata.json that exists but cannot be read still shadows the system entry
      // (upstream's `try_exists().unwrap_or(true)`): readEntry throws for it.
      return readEntry("user", userDir, name) ?? readEntry("system", system.dir, name);
    },
    list() {
      const entries: RegistryEntry[] = [];
      // Names seen in the user registry, readable or not: a broken user entry still shadows.
      const seen = new Set<string>();
      const problems: string[] = [];
      for (const [source, root] of roots) {
        const dir = join(root, "gateways");
        const listed = listDirectories(dir, MAX_ENTRIES);
        if (listed.problem) problems.push(`cannot list ${dir}: ${listed.problem}`);
        if (listed.truncated) problems.push(`${dir} has more than ${MAX_ENTRIES} entries; only the first ${MAX_ENTRIES} were read`);
        for (const name of listed.names) {
          if (seen.has(name) || gatewayNameProblem(name) !== undefined) continue;
          try {
            const entry = readEntry(source, root, name);
            if (entry === undefined) continue;
            entries.push(entry);
          } catch (err) {
            problems.push((err as Error).message);
          }
          seen.add(name);
        }
      }
      entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      return { entries, problems };
    },
    names() {
      const all = roots.flatMap(([, root]) => listDirectories(join(root, "gateways"), MAX_ENTRIES).names);
      return [...new Set(all)];
    },
    bundleDir(name, entry) {
      const user = mtlsDir(userDir, name);
      if (entry?.source === "user") return user;
      if (entry?.source === "system") return firstDirectory(user) ?? mtlsDir(system.dir, name);
      // No entry (an endpoint given directly): wherever a bundle for the name is.
      return firstDirectory(user, mtlsDir(system.dir, name)) ?? user;
    },
    oidcTokenFiles(entry) {
      const user = oidcTokenFile(userDir, entry.name);
      if (entry.source === "user") return { read: user, write: user };
      const own = oidcTokenFile(system.dir, entry.name);
      // The system registry is read-only: a refreshed token goes to the user registry, which is
      // where upstream's `gateway login` writes it too.
      return { read: kindOf(user) === "missing" ? own : user, write: user };
    },
    userGatewayDir: (name) => gatewayDir(userDir, name),
  };
}
