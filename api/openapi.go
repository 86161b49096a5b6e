// Package api holds the machine-readable description of the client API: the OpenAPI 3.1
// document that every replica serves at GET /openapi.yaml and that the end-to-end suites
// validate every response against. It is embedded so the binary serves exactly the document
// the tests checked, with no file to deploy beside it. The wire types themselves live in
// api/contract, which must not import this package (it imports nothing of the project).
package api

import (
	_ "embed" // the document is embedded
)

//go:embed openapi.yaml
var openAPI []byte

// OpenAPIContentType is the media type GET /openapi.yaml answers with (RFC 9512).
const OpenAPIContentType = "application/yaml"

// OpenAPI returns the OpenAPI 3.1 document of the client API, api/openapi.yaml. The slice is
// a copy: a caller may keep or change it without touching what the server serves.
func OpenAPI() []byte {
	return append([]byte(nil), openAPI...)
}
