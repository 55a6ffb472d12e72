package builtin

import "encoding/json"

// JSON Schemas of the tools' arguments, published in the endpoint metadata
// (`nats micro info`, `skillbus tools`).
var (
	schemaList = json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{` +
		`"path":{"type":"string","description":"directory relative to the tool root; default the root"},` +
		`"hidden":{"type":"boolean","description":"include names starting with a dot"}}}`)
	schemaStat = json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{` +
		`"path":{"type":"string","description":"path relative to the tool root"}}}`)
	schemaRead = json.RawMessage(`{"type":"object","additionalProperties":false,"required":["path"],"properties":{` +
		`"path":{"type":"string","description":"file relative to the tool root"},` +
		`"max_bytes":{"type":"integer","minimum":0,"description":"read at most this many bytes (capped by the provider)"}}}`)
	schemaGlob = json.RawMessage(`{"type":"object","additionalProperties":false,"required":["pattern"],"properties":{` +
		`"pattern":{"type":"string","description":"glob relative to the tool root; ** matches any depth, {a,b} alternatives"},` +
		`"hidden":{"type":"boolean","description":"include paths with a part starting with a dot"}}}`)
	schemaGrep = json.RawMessage(`{"type":"object","additionalProperties":false,"required":["pattern"],"properties":{` +
		`"pattern":{"type":"string","description":"RE2 regular expression matched against each line"},` +
		`"path":{"type":"string","description":"file or directory relative to the tool root; default the root"},` +
		`"include":{"type":"string","description":"glob the file path or name must match, e.g. *.go"},` +
		`"ignore_case":{"type":"boolean"},` +
		`"max_matches":{"type":"integer","minimum":0,"description":"default 100"},` +
		`"hidden":{"type":"boolean","description":"search hidden files and directories too"}}}`)
	schemaLines = json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{` +
		`"path":{"type":"string","description":"directory relative to the tool root; default the root"},` +
		`"hidden":{"type":"boolean","description":"count hidden files and directories too"}}}`)
	schemaRun = json.RawMessage(`{"type":"object","additionalProperties":false,"required":["command"],"properties":{` +
		`"command":{"type":"string","description":"an allow-listed command"},` +
		`"args":{"type":"array","items":{"type":"string"}},` +
		`"dir":{"type":"string","description":"working directory relative to the tool root"},` +
		`"timeout":{"type":"string","description":"Go duration, capped by the provider"},` +
		`"stdin":{"type":"string"},` +
		`"check":{"type":"boolean","description":"a non-zero exit status is an error (default true)"}}}`)
	schemaRender = json.RawMessage(`{"type":"object","additionalProperties":false,"required":["template"],"properties":{` +
		`"template":{"type":"string","description":"Go text/template; functions: join lines first trunc json keys default upper lower trim"},` +
		`"data":{"description":"the value the template renders (. in the template)"}}}`)
)
