package testkit

import (
	"fmt"
	"strings"

	"github.com/acv/acv/api/contract"
)

// BadBody is a malformed verify or reactivate request the contract names, with the answer it
// must get.
type BadBody struct {
	Name    string
	Path    string
	Body    string // %[1]s is the code value of the case, BadBodyValue(i)
	Status  int
	Mention string // a word the detail must contain
	Chunked bool
}

// BadBodyValue is the code value the i-th case of BadBodies names. The lengths of the cases at
// the limits count on its five characters.
func BadBodyValue(i int) string { return fmt.Sprintf("BI-%02d", i) }

// BadBodies lists every malformed body the contract names, on a project's verify (vpath) and
// reactivate (rpath) paths: the end-to-end test and the HTTP adapter's refuse the same cases.
func BadBodies(vpath, rpath string) []BadBody {
	long := func(n int) string { return strings.Repeat("x", n) }
	return []BadBody{
		{"malformed JSON", vpath, `{"code":"%[1]s",`, 400, "JSON", false},
		{"not JSON", vpath, `code=%[1]s`, 400, "JSON", false},
		{"JSON array", vpath, `["%[1]s"]`, 400, "object", false},
		{"JSON null", vpath, `null`, 400, "code", false},
		{"JSON string", vpath, `"%[1]s"`, 400, "object", false},
		{"JSON number", vpath, `42`, 400, "object", false},
		{"empty body", vpath, ``, 400, "code", false},
		{"missing code", vpath, `{"verified_by":"%[1]s"}`, 400, "code", false},
		{"code null", vpath, `{"code":null}`, 400, "code", false},
		{"code a number", vpath, `{"code":123}`, 400, "code", false},
		{"code an object", vpath, `{"code":{"value":"%[1]s"}}`, 400, "code", false},
		{"code a list", rpath, `{"code":["%[1]s"]}`, 400, "code", false},
		{"verified_by a number", vpath, `{"code":"%[1]s","verified_by":7}`, 400, "verified_by", false},
		{"reactivated_by a boolean", rpath, `{"code":"%[1]s","reactivated_by":true}`, 400, "reactivated_by", false},
		{"reason a number", rpath, `{"code":"%[1]s","reason":1}`, 400, "reason", false},
		{"empty code", vpath, `{"code":"","verified_by":"%[1]s"}`, 400, "code", false},
		{"code of 101 characters", vpath, `{"code":"%[1]s` + long(101-5) + `"}`, 400, "100", false},
		{"code with U+0001", vpath, `{"code":"%[1]s\u0001"}`, 400, "control", false},
		{"code with DEL", vpath, `{"code":"%[1]s\u007f"}`, 400, "control", false},
		{"code with a newline", rpath, `{"code":"%[1]s\n"}`, 400, "control", false},
		{"verified_by of 101 characters", vpath, `{"code":"%[1]s","verified_by":"` + long(101) + `"}`, 400, "verified_by", false},
		{"verified_by with a control character", vpath, `{"code":"%[1]s","verified_by":"a\u0007b"}`, 400, "verified_by", false},
		{"verified_by claiming the console", vpath, `{"code":"%[1]s","verified_by":"console:alice"}`, 400, "console", false},
		{"reactivated_by claiming the console", rpath, `{"code":"%[1]s","reactivated_by":"CONSOLE:bob"}`, 400, "console", false},
		{"reactivated_by of 101 characters", rpath, `{"code":"%[1]s","reactivated_by":"` + long(101) + `"}`, 400, "reactivated_by", false},
		{"reason of 501 characters", rpath, `{"code":"%[1]s","reason":"` + long(501) + `"}`, 400, "reason", false},
		{"trailing object", vpath, `{"code":"%[1]s"} {"code":"%[1]s"}`, 400, "JSON", false},
		{"trailing brace", vpath, `{"code":"%[1]s"}}`, 400, "JSON", false},
		{"trailing bracket", vpath, `{"code":"%[1]s"}]`, 400, "JSON", false},
		{"1 MiB body", vpath, `{"code":"%[1]s","verified_by":"` + long(1<<20) + `"}`, 413, "64 KiB", false},
		{"just over 64 KiB", vpath, `{"code":"%[1]s"}` + strings.Repeat(" ", contract.MaxBodyBytes+1-len(`{"code":"BI-00"}`)), 413, "64 KiB", false},
		{"just over 64 KiB, chunked", vpath, `{"code":"%[1]s"}` + strings.Repeat(" ", contract.MaxBodyBytes+1-len(`{"code":"BI-00"}`)), 413, "64 KiB", true},
	}
}
