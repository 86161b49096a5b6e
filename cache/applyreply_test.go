package cache

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
)

// apply.lua's reply is decoded strictly: every form its header promises, and nothing else.
func TestApplyReplyDecoding(t *testing.T) {
	const (
		idHex = "0123456789abcdef0123456789abcdef"
		vat   = int64(1_750_000_000_123)
		first = int64(1_790_000_000_001)
	)
	raw := rawID(idHex)
	oddID := " " + strings.Repeat("|", 15) // a code id of 16 raw bytes may hold any byte
	now := time.UnixMilli(1_800_000_000_007)
	verify := contract.Operation{Action: contract.ActionVerify, Now: now}
	reactivate := contract.Operation{Action: contract.ActionReactivate, Now: now}
	at := now.UnixMilli()
	cases := []struct {
		name  string
		op    contract.Operation
		reply interface{}
		want  applyReply
	}{
		{"code miss", verify, int64(statusCodeMiss), applyReply{status: statusCodeMiss}},
		{"project miss", verify, int64(statusProjectMiss), applyReply{status: statusProjectMiss}},
		{"idempotency conflict", verify, int64(statusIdemConflict), applyReply{status: statusIdemConflict}},
		{"not found", verify, "", applyReply{errorCode: "CODE_NOT_FOUND", atMs: at}},
		{"verified", verify, raw, applyReply{codeID: idHex, verifiedAtMs: at, atMs: at}},
		{"reactivated", reactivate, raw, applyReply{codeID: idHex, atMs: at}},
		{"already used", verify, raw + "CODE_ALREADY_USED|1750000000123",
			applyReply{errorCode: "CODE_ALREADY_USED", codeID: idHex, verifiedAtMs: vat, atMs: at}},
		{"already unused", reactivate, raw + "CODE_ALREADY_UNUSED|",
			applyReply{errorCode: "CODE_ALREADY_UNUSED", codeID: idHex, atMs: at}},
		{"a raw id holding the separators", verify, oddID + "CODE_DISABLED|",
			applyReply{errorCode: "CODE_DISABLED", codeID: "207c7c7c7c7c7c7c7c7c7c7c7c7c7c7c", atMs: at}},
		{"stored", verify, []interface{}{"1750000000123|1790000000001||" + raw},
			applyReply{status: statusIdemReplayed, codeID: idHex, verifiedAtMs: vat, atMs: first}},
		{"stored refusal", reactivate, []interface{}{"0|1790000000001|CODE_ALREADY_UNUSED|" + raw},
			applyReply{status: statusIdemReplayed, errorCode: "CODE_ALREADY_UNUSED", codeID: idHex, atMs: first}},
		{"stored not found", verify, []interface{}{"0|1790000000001|CODE_NOT_FOUND|"},
			applyReply{status: statusIdemReplayed, errorCode: "CODE_NOT_FOUND", atMs: first}},
	}
	for _, tc := range cases {
		got, err := decodeApply(tc.reply, tc.op)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}

	for _, bad := range []interface{}{
		nil, int64(statusOK), int64(statusRateLimited), int64(4), int64(statusIdemReplayed), int64(-1), int64(9),
		[]interface{}{"CODE_ALREADY_USED|" + idHex + "|1750000000123|1790000000001"},
		"0", "short", raw[:15], raw + "X", raw + "|1", raw + "CODE_EXPIRED|x", raw + "CODE_EXPIRED|-1",
		[]interface{}{}, []interface{}{""}, []interface{}{"x"}, []interface{}{"1|2|E"},
		[]interface{}{"1|x|E|" + raw}, []interface{}{"1|2|E|" + raw[:15]}, []interface{}{"1||E|" + raw},
		[]interface{}{"-1|2|E|" + raw}, []interface{}{"E|nothex|1|2"}, []interface{}{"E|" + idHex + "|1"},
		[]interface{}{"E|" + idHex + "|1|2|3"}, []interface{}{"1|2|E|" + raw, "x"}, []interface{}{int64(6)},
		[]interface{}{int64(0), "", "", int64(0), int64(0)}, 1.5, true, []byte(raw),
	} {
		got, err := decodeApply(bad, verify)
		if err == nil {
			t.Errorf("%q: decoded %+v without an error", bad, got)
		} else if !strings.Contains(err.Error(), "apply.lua") {
			t.Errorf("%q: error %q does not name the script", bad, err)
		}
	}
}
