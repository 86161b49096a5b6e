// Package api holds the client API's OpenAPI 3.1 document, embedded so every replica serves
// at GET /openapi.yaml exactly the document the end-to-end suites validate responses against.
package api

import _ "embed"

//go:embed openapi.yaml
var openAPI []byte

// OpenAPIContentType is the media type GET /openapi.yaml answers with (RFC 9512).
const OpenAPIContentType = "application/yaml"

// OpenAPI returns the OpenAPI 3.1 document of the client API, api/openapi.yaml. The slice is
// a copy: a caller may keep or change it without touching what the server serves.
func OpenAPI() []byte {
	return append([]byte(nil), openAPI...)
}
