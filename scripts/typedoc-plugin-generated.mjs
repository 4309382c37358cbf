// TypeDoc plugin: exempts the generated code in src/gen (re-exported by `openshell-config/raw`)
// from `validation.notDocumented`, which stays in force for everything else.
//
// protoc-gen-es documents every message, field, enum and RPC with the proto comment or an
// `@generated from ...` line. What it cannot document are the members of the synthetic type
// literals it emits: the `case`/`value` pair of each oneof alternative, and the `methodKind`,
// `input` and `output` of each method of a service descriptor. This plugin gives exactly those,
// and any other undocumented reflection declared in src/gen, a comment before validation runs,
// so a newly generated message never breaks `npm run docs`.

import { readFileSync } from "node:fs";
import { Comment, Converter, ReflectionKind } from "typedoc";

const GENERATED_DIR = "src/gen/";
const OWN_PACKAGE = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")).name;

const SERVICE_METHOD_MEMBERS = {
  methodKind: "The kind of RPC: unary, server streaming, client streaming or bidi streaming.",
  input: "The schema of the request message.",
  output: "The schema of the response message.",
};

/** @param {import("typedoc").Application} app */
export function load(app) {
  app.converter.on(
    Converter.EVENT_RESOLVE_BEGIN,
    (context) => {
      const project = context.project;
      // Only the kinds the validation checks (signatures are covered by their parent's comment).
      const kinds = app.options
        .getValue("requiredToBeDocumented")
        .reduce((all, kind) => all | ReflectionKind[kind], 0);
      for (const reflection of Object.values(project.reflections)) {
        if (!reflection.kindOf(kinds) || reflection.hasComment()) continue;
        const id = project.getSymbolIdFromReflection(reflection);
        if (id === undefined || id.packageName !== OWN_PACKAGE || !id.packagePath.startsWith(GENERATED_DIR)) continue;
        reflection.comment = new Comment(text(describe(reflection)));
      }
    },
    // Before TypeDoc's own resolve-begin handlers, so the comments are processed like any other.
    200,
  );
}

/** @param {string} s */
function text(s) {
  return [{ kind: "text", text: s }];
}

/** @param {import("typedoc").Reflection} r */
function describe(r) {
  const siblings = r.parent?.kindOf(ReflectionKind.TypeLiteral) ? r.parent.children ?? [] : [];
  const has = (name) => siblings.some((s) => s.name === name);
  const isUndefined = r.type?.type === "intrinsic" && r.type.name === "undefined";
  if (r.name === "case" && has("value")) {
    return isUndefined
      ? "`undefined`: no field of this oneof is set."
      : "The name of the oneof field that is set; `value` holds its value.";
  }
  if (r.name === "value" && has("case")) {
    return isUndefined ? "Absent: no field of this oneof is set." : "The value of the oneof field named by `case`.";
  }
  if (r.name in SERVICE_METHOD_MEMBERS && has("methodKind") && has("input") && has("output")) {
    return SERVICE_METHOD_MEMBERS[r.name];
  }
  return "Generated from the protobuf definitions in `proto/`.";
}
