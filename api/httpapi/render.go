package httpapi

import (
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/acv/acv/api/contract"
	"github.com/gin-gonic/gin"
)

// The verify and reactivate bodies are rendered by hand: they are the hot path's whole answer,
// and reflection-based encoding cost more than the rest of the handler's rendering together.
// The output is byte-for-byte what encoding/json writes for contract.VerifyResponse and
// contract.ReactivateResponse (a test holds it to that).

func renderVerify(c *gin.Context, r contract.VerifyResponse) {
	renderResult(c, r.Success, r.CodeID, r.Code, "verified_at", r.VerifiedAt, r.Message, r.ErrorCode)
}

func renderReactivate(c *gin.Context, r contract.ReactivateResponse) {
	renderResult(c, r.Success, r.CodeID, r.Code, "reactivated_at", r.ReactivatedAt, r.Message, r.ErrorCode)
}

// renderResult writes the fields both result bodies share, in their struct order; they differ
// only in the name of the time field.
func renderResult(c *gin.Context, success bool, codeID *string, code, atField string, at *int64, message string, errorCode *string) {
	b := make([]byte, 0, 256)
	b = append(b, `{"success":`...)
	b = strconv.AppendBool(b, success)
	b = append(b, `,"code_id":`...)
	b = appendOptString(b, codeID)
	b = append(b, `,"code":`...)
	b = appendString(b, code)
	b = append(b, `,"`...)
	b = append(b, atField...)
	b = append(b, `":`...)
	b = appendOptInt(b, at)
	b = append(b, `,"message":`...)
	b = appendString(b, message)
	b = append(b, `,"error_code":`...)
	b = appendOptString(b, errorCode)
	b = append(b, '}')
	c.Data(http.StatusOK, "application/json; charset=utf-8", b)
}

func appendOptString(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return appendString(b, *s)
}

func appendOptInt(b []byte, v *int64) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	return strconv.AppendInt(b, *v, 10)
}

const hexDigits = "0123456789abcdef"

// appendString writes s as a JSON string the way encoding/json does: HTML-sensitive
// characters, control characters and U+2028/U+2029 escaped, invalid UTF-8 as U+FFFD.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
