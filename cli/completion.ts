// `openshell-config completion bash|zsh`: a completion script generated from the same command
// tree the parser uses (program.ts), so that it cannot offer a command or option that does not
// exist. It completes commands, subcommands, each command's options (and the global ones), the
// values of options with a fixed set (--output, --protocol, --type, the shell) and file names
// for --file and --config, the names of the openshell CLI's registered gateways for -g (read from
// the registry's directories by the script itself), and the subcommands of a command that has its
// own (`policy rollout resume|approve|undo|status|list|history`). Sandbox names (after --sandbox),
// operation ids (operation get|wait) and rollout ids (policy rollout resume|approve|undo|status:
// the gateway's shared records, then the saved ones) come from the hidden
// `openshell-config __complete KIND WORDS...` (dynamic-completion.ts), bounded in time, which
// reads the connection flags from the words typed so far.

import { ARGUMENT_CHOICES, COMMANDS, GLOBAL_OPTIONS, type OptionSpec } from "./program.js";
import type { Shell } from "./types.js";

interface Tree {
  /** Top-level words: groups and lone commands, with a description. */
  readonly top: readonly (readonly [string, string])[];
  /** Per group: its subcommands with a description. */
  readonly groups: ReadonlyMap<string, readonly (readonly [string, string])[]>;
  /** Per command with subcommands of its own (`policy rollout`): those, with a description. */
  readonly subs: ReadonlyMap<string, readonly (readonly [string, string])[]>;
  /** Per command (`policy set`): its options and the global ones, with a description. */
  readonly options: ReadonlyMap<string, readonly (readonly [string, string])[]>;
  /** Options that take a value, short and long. */
  readonly valued: readonly string[];
  /** Options with a fixed set of values. */
  readonly choices: readonly (readonly [readonly string[], readonly string[]])[];
  /** Options whose value is a file. */
  readonly files: readonly string[];
  /** Options whose value is a registered gateway's name. */
  readonly gateways: readonly string[];
  /** Options whose value is a sandbox name, from the gateway. */
  readonly sandboxes: readonly string[];
}

/** Commands whose positional argument the gateway (or the saved rollouts) completes, and with what. */
const DYNAMIC_ARGUMENTS: readonly (readonly [string, "operation" | "rollout"])[] = [
  ["operation get", "operation"],
  ["operation wait", "operation"],
  ["policy rollout resume", "rollout"],
  ["policy rollout undo", "rollout"],
  ["policy rollout status", "rollout"],
  ["policy rollout approve", "rollout"],
];

const flagsOf = (o: OptionSpec) => o.flags.split(/[ ,]+/).filter((f) => f.startsWith("-"));
const takesValue = (o: OptionSpec) => /[<[]/.test(o.flags);

function tree(): Tree {
  const top: [string, string][] = [];
  const groups = new Map<string, [string, string][]>();
  const subs = new Map<string, [string, string][]>();
  const options = new Map<string, [string, string][]>();
  const all = [...GLOBAL_OPTIONS, ...COMMANDS.flatMap((c) => c.options)];
  for (const c of COMMANDS) {
    const [group, verb, sub] = c.name.split(" ") as [string, string | undefined, string | undefined];
    // `policy rollout resume|undo|status`: words after `policy rollout`, beside its options.
    if (sub !== undefined) {
      const parent = `${group} ${verb}`;
      subs.set(parent, [...(subs.get(parent) ?? []), [sub, c.summary]]);
    } else if (verb === undefined) top.push([group, c.summary]);
    else {
      if (!groups.has(group)) {
        groups.set(group, []);
        top.push([group, `${group} commands`]);
      }
      groups.get(group)!.push([verb, c.summary]);
    }
    options.set(
      c.name,
      [...c.options, ...GLOBAL_OPTIONS, { flags: "--help", help: "show this command's help" }].map((o) => [flagsOf(o).at(-1)!, o.help] as [string, string]),
    );
  }
  const uniq = (xs: string[]) => [...new Set(xs)];
  const choices = new Map<string, string[]>();
  for (const o of all) if (o.choices) for (const f of flagsOf(o)) choices.set(f, [...o.choices]);
  const byValues = new Map<string, string[]>();
  for (const [flag, values] of choices) byValues.set(values.join(" "), [...(byValues.get(values.join(" ")) ?? []), flag]);
  return {
    top,
    groups,
    subs,
    options,
    valued: uniq(all.filter(takesValue).flatMap(flagsOf)),
    choices: [...byValues].map(([values, flags]) => [flags, values.split(" ")] as const),
    files: uniq(all.filter((o) => o.complete === "file").flatMap(flagsOf)),
    gateways: uniq(all.filter((o) => o.complete === "gateway").flatMap(flagsOf)),
    sandboxes: uniq(all.filter((o) => o.complete === "sandbox").flatMap(flagsOf)),
  };
}

const sq = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

// The names of the registered gateways (a directory with a metadata.json), user and system
// registries, as registry-paths.ts finds them; the same in bash and zsh.
const gatewayNames = (shell: Shell) => `_openshell_config_gateways() {${shell === "zsh" ? "\n  setopt localoptions nullglob" : ""}
  local sys="\${OPENSHELL_SYSTEM_GATEWAY_DIR:-/etc/openshell}" f
  [[ $sys == /* ]] || sys=/etc/openshell
  for f in "\${XDG_CONFIG_HOME:-$HOME/.config}"/openshell/gateways/*/metadata.json "$sys"/gateways/*/metadata.json; do
    f=\${f%/metadata.json}
    # Plain names only: a directory name is data, never shell syntax for compgen to expand.
    [[ -f $f/metadata.json && \${f##*/} =~ ^[A-Za-z0-9._-]+$ ]] && printf '%s\\n' "\${f##*/}"
  done
}`;

/** The completion script for `shell`. */
export function completionScript(shell: Shell): string {
  return shell === "bash" ? bashScript(tree()) : zshScript(tree());
}

function bashScript(t: Tree): string {
  const groupNames = [...t.groups.keys()];
  const words = (cmd: string): string => {
    if (cmd === "") return t.top.map(([w]) => w).join(" ");
    if (t.groups.has(cmd)) return t.groups.get(cmd)!.map(([w]) => w).join(" ");
    const args = ARGUMENT_CHOICES[cmd as keyof typeof ARGUMENT_CHOICES] ?? [];
    const subWords = (t.subs.get(cmd) ?? []).map(([w]) => w);
    return [...subWords, ...args, ...(t.options.get(cmd) ?? []).map(([w]) => w)].join(" ");
  };
  const parents = `|${[...t.subs.keys()].join("|")}|`;
  const cases = ["", ...groupNames, ...COMMANDS.map((c) => c.name)].map((cmd) => `    ${sq(cmd)}) words=${sq(words(cmd))} ;;`);
  return `# bash completion for openshell-config. Load it with:
#   source <(openshell-config completion bash)
# or save it as ~/.local/share/bash-completion/completions/openshell-config
${gatewayNames("bash")}
_openshell_config() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" prev="\${COMP_WORDS[COMP_CWORD-1]}"
  local valued=${sq(` ${t.valued.join(" ")} `)}
  local cmd="" i w
  for ((i = 1; i < COMP_CWORD; i++)); do
    w="\${COMP_WORDS[i]}"
    if [[ $w == -* ]]; then
      [[ $valued == *" $w "* ]] && ((i++))
    elif [[ -z $cmd ]]; then
      cmd=$w
    elif [[ $cmd != *" "* && ${sq(` ${groupNames.join(" ")} `)} == *" $cmd "* ]]; then
      cmd="$cmd $w"
    elif [[ ${sq(parents)} == *"|$cmd|"* && ${sq(` ${[...new Set([...t.subs.values()].flat().map(([w]) => w))].join(" ")} `)} == *" $w "* ]]; then
      cmd="$cmd $w"
    fi
  done
  case "$prev" in
${t.choices.map(([flags, values]) => `    ${flags.join("|")}) COMPREPLY=($(compgen -W ${sq(values.join(" "))} -- "$cur")); return ;;`).join("\n")}
    ${t.files.join("|")}) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "$cur")); return ;;
    ${t.gateways.join("|")}) local n; COMPREPLY=(); while IFS= read -r n; do [[ $n == "$cur"* ]] && COMPREPLY+=("$n"); done < <(_openshell_config_gateways | sort -u); return ;;
    ${t.sandboxes.join("|")}) _openshell_config_dynamic sandbox; return ;;
  esac
  # Some other value (a sandbox name, a duration): nothing to offer.
  [[ $valued == *" $prev "* ]] && return
  local words=""
  case "$cmd" in
${cases.join("\n")}
  esac
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
  # The argument of a command that takes an operation or rollout id, once none is typed yet.
  if [[ $cur != -* ]]; then
    case "$cmd" in
${DYNAMIC_ARGUMENTS.map(([c, kind]) => `      ${sq(c)}) _openshell_config_dynamic ${kind} keep ;;`).join("\n")}
    esac
  fi
}
# Values from the gateway (or the saved rollouts), bounded in time by the command itself; the
# words typed so far carry the connection flags. "keep" adds to what is offered already.
_openshell_config_dynamic() {
  local n
  [[ $2 == keep ]] || COMPREPLY=()
  while IFS= read -r n; do
    [[ $n == "$cur"* ]] && COMPREPLY+=("$n")
  done < <("\${COMP_WORDS[0]}" __complete "$1" "\${COMP_WORDS[@]:1:COMP_CWORD-1}" 2>/dev/null)
}
complete -F _openshell_config openshell-config
`;
}

// zsh: _describe takes "word:description" with colons in the word escaped.
const zq = (word: string, help: string) => sq(`${word.replace(/:/g, "\\:")}:${help}`);

function zshScript(t: Tree): string {
  const groupNames = [...t.groups.keys()];
  const describe = (what: string, entries: readonly (readonly [string, string])[]) =>
    `local -a items=(${entries.map(([w, h]) => zq(w, h)).join(" ")}); _describe -t ${what} ${sq(what)} items`;
  const cases = [
    `    ${sq("")}) ${describe("commands", t.top)} ;;`,
    ...groupNames.map((g) => `    ${sq(g)}) ${describe("commands", t.groups.get(g)!)} ;;`),
    ...COMMANDS.map((c) => {
      const args = (ARGUMENT_CHOICES[c.name] ?? []).map((a) => [a, `${a} completion`] as const);
      return `    ${sq(c.name)}) ${describe("options", [...(t.subs.get(c.name) ?? []), ...args, ...(t.options.get(c.name) ?? [])])} ;;`;
    }),
  ];
  const parents = `|${[...t.subs.keys()].join("|")}|`;
  const subWords = ` ${[...new Set([...t.subs.values()].flat().map(([w]) => w))].join(" ")} `;
  return `#compdef openshell-config
# zsh completion for openshell-config. Load it with (after compinit):
#   source <(openshell-config completion zsh)
# or save it as _openshell-config in a directory of $fpath.
${gatewayNames("zsh")}
_openshell_config() {
  local -a valued=(${t.valued.join(" ")})
  local cmd="" i w
  for ((i = 2; i < CURRENT; i++)); do
    w=\${words[i]}
    if [[ $w == -* ]]; then
      (( \${valued[(Ie)$w]} )) && ((i++))
    elif [[ -z $cmd ]]; then
      cmd=$w
    elif [[ $cmd != *" "* && " ${groupNames.join(" ")} " == *" $cmd "* ]]; then
      cmd="$cmd $w"
    elif [[ ${sq(parents)} == *"|$cmd|"* && ${sq(subWords)} == *" $w "* ]]; then
      cmd="$cmd $w"
    fi
  done
  local prev=\${words[CURRENT-1]}
  case $prev in
${t.choices.map(([flags, values]) => `    ${flags.join("|")}) _values 'value' ${values.map(sq).join(" ")}; return ;;`).join("\n")}
    ${t.files.join("|")}) _files; return ;;
    ${t.gateways.join("|")}) local -a gws=(\${(f)"$(_openshell_config_gateways | sort -u)"}); compadd -a gws; return ;;
    ${t.sandboxes.join("|")}) _openshell_config_dynamic sandbox; return ;;
  esac
  (( \${valued[(Ie)$prev]} )) && return
  if [[ \${words[CURRENT]} != -* ]]; then
    case $cmd in
${DYNAMIC_ARGUMENTS.map(([c, kind]) => `      ${sq(c)}) _openshell_config_dynamic ${kind} ;;`).join("\n")}
    esac
  fi
  case $cmd in
${cases.join("\n")}
  esac
}
# Values from the gateway (or the saved rollouts), bounded in time by the command itself; the
# words typed so far carry the connection flags.
_openshell_config_dynamic() {
  local -a found=(\${(f)"$(\${words[1]} __complete $1 "\${(@)words[2,CURRENT-1]}" 2>/dev/null)"})
  compadd -a found
}
if (( $+functions[compdef] )); then
  compdef _openshell_config openshell-config
fi
`;
}
