// Package docs holds the integrators' prose documentation, embedded so the operator console
// serves the very file the repository keeps (and docs/api.md's own test checks) instead of a
// second copy that would drift.
package docs

import _ "embed" // the guide is embedded

//go:embed api.md
var apiGuide []byte

// APIGuide returns docs/api.md, the client API reference with the signing guide, as Markdown.
// The slice is a copy.
func APIGuide() []byte { return append([]byte(nil), apiGuide...) }
