#if Server  // the package trait (Package.swift); without it this target is empty
/// GET /docs: the OpenAPI document rendered as a page, with no script or style from elsewhere
/// (servers often have no network): it fetches /openapi.json and lists each route with its
/// summary, request fields and response shape.
let apiDocsPage = #"""
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>SwiftBERT API</title>
<style>
body { font: 15px/1.45 system-ui, sans-serif; max-width: 60em; margin: 2em auto; padding: 0 1em; color: #222; }
h1 { font-size: 1.6em; } h2 { font-size: 1.1em; margin: 1.6em 0 .3em; font-family: ui-monospace, monospace; }
.method { display: inline-block; min-width: 3.5em; padding: 0 .4em; border-radius: 3px; color: #fff; background: #555; }
.post { background: #2f6f3e; } .get { background: #2a5d9f; } .head { background: #777; }
table { border-collapse: collapse; margin: .3em 0; } td, th { border: 1px solid #ccc; padding: .15em .5em; text-align: left; vertical-align: top; }
code, pre { font-family: ui-monospace, monospace; font-size: .92em; } pre { background: #f5f5f5; padding: .5em; white-space: pre-wrap; overflow-wrap: anywhere; }
#error { color: #a00; }
</style>
</head>
<body>
<h1 id="title">SwiftBERT API</h1>
<p>From <a href="/openapi.json">/openapi.json</a> (OpenAPI 3.1).</p>
<p id="error"></p>
<div id="routes"></div>
<script>
function typeOf(schema, components) {
  if (!schema) return "";
  if (schema.$ref) return typeOf(components[schema.$ref.split("/").pop()], components);
  if (schema.oneOf) return schema.oneOf.map(s => typeOf(s, components)).join(" | ");
  if (schema.enum) return schema.enum.map(v => JSON.stringify(v)).join(" | ");
  if (schema.pattern) return schema.description || "string matching " + schema.pattern;
  if (schema.type === "array") {
    const item = typeOf(schema.items, components);
    return (item.includes(" | ") ? "(" + item + ")" : item) + "[]" + (schema.minItems ? " (at least " + schema.minItems + ")" : "");
  }
  if (schema.type === "object") {
    const props = Object.entries(schema.properties || {});
    if (props.length === 0) return "object";
    return "{" + props.map(([name, s]) => name + ": " + typeOf(s, components)).join(", ") + "}";
  }
  return schema.type;
}
function text(tag, content, cls) { const e = document.createElement(tag); e.textContent = content; if (cls) e.className = cls; return e; }
fetch("/openapi.json").then(r => {
  if (!r.ok) throw new Error("GET /openapi.json answered " + r.status);
  return r.json();
}).then(doc => {
  document.getElementById("title").textContent = doc.info.title + " API " + doc.info.version;
  const components = (doc.components || {}).schemas || {};
  const routes = document.getElementById("routes");
  for (const [path, operations] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(operations)) {
      const h = document.createElement("h2");
      h.className = "route";
      h.id = method + path.replace(/[^a-z0-9]+/gi, "-");
      h.append(text("span", method.toUpperCase(), "method " + method), " " + path);
      routes.append(h, text("p", op.summary || ""));
      const body = op.requestBody?.content?.["application/json"]?.schema;
      if (body && body.properties) {
        const table = document.createElement("table");
        table.append(Object.assign(document.createElement("tr"), { innerHTML: "<th>field</th><th>type</th><th>required</th>" }));
        for (const [name, s] of Object.entries(body.properties)) {
          const row = document.createElement("tr");
          // An optional field may be null, as absent: the required column says so already.
          const required = (body.required || []).includes(name);
          const type = typeOf(s, components);
          row.append(text("td", name), text("td", required ? type : type.replace(/ \| null$/, "")), text("td", required ? "yes" : ""));
          table.append(row);
        }
        routes.append(table);
      }
      const ok = op.responses?.["200"]?.content?.["application/json"]?.schema;
      if (ok) routes.append(text("pre", "200: " + typeOf(ok, components)));
    }
  }
}).catch(e => { document.getElementById("error").textContent = "could not read /openapi.json: " + e; });
</script>
</body>
</html>
"""#
#endif
