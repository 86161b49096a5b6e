package server

import (
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/acv/acv/api"
	"github.com/gin-gonic/gin"
)

// The verify and reactivate bodies are rendered by hand: they are the hot path's whole answer,
// and reflection-based encoding cost more than the rest of the handler's rendering together.
// The output is byte-for-byte what encoding/json writes for api.VerifyResponse and
// api.ReactivateResponse (a test holds it to that).

func renderVerify(c *gin.Context, r api.VerifyResponse) {
	b := make([]byte, 0, 256)
	b = append(b, `{"success":`...)
	b = strconv.AppendBool(b, r.Success)
	b = append(b, `,"code_id":`...)
	b = appendOptString(b, r.CodeID)
	b = append(b, `,"code":`...)
	b = appendString(b, r.Code)
	b = append(b, `,"verified_at":`...)
	b = appendOptInt(b, r.VerifiedAt)
	b = append(b, `,"message":`...)
	b = appendString(b, r.Message)
	b = append(b, `,"error_code":`...)
	b = appendOptString(b, r.ErrorCode)
	b = append(b, '}')
	c.Data(http.StatusOK, "application/json; charset=utf-8", b)
}

func renderReactivate(c *gin.Context, r api.ReactivateResponse) {
	b := make([]byte, 0, 256)
	b = append(b, `{"success":`...)
	b = strconv.AppendBool(b, r.Success)
	b = append(b, `,"code_id":`...)
	b = appendOptString(b, r.CodeID)
	b = append(b, `,"code":`...)
	b = appendString(b, r.Code)
	b = append(b, `,"reactivated_at":`...)
	b = appendOptInt(b, r.ReactivatedAt)
	b = append(b, `,"message":`...)
	b = appendString(b, r.Message)
	b = append(b, `,"error_code":`...)
	b = appendOptString(b, r.ErrorCode)
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
