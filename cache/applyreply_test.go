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
	r := func(st status, outcome string) interface{} { return []interface{}{int64(st), outcome} }
	const (
		idHex = "0123456789abcdef0123456789abcdef"
		vat   = int64(1_750_000_000_123)
		first = int64(1_790_000_000_001)
	)
	raw := contract.RawID(idHex)
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
		{"code miss", verify, r(statusCodeMiss, ""), applyReply{status: statusCodeMiss}},
		{"project miss", verify, r(statusProjectMiss, ""), applyReply{status: statusProjectMiss}},
		{"idempotency conflict", verify, r(statusIdemConflict, ""), applyReply{status: statusIdemConflict}},
		{"not found", verify, r(statusOK, ""), applyReply{errorCode: "CODE_NOT_FOUND", atMs: at}},
		{"verified", verify, r(statusOK, raw), applyReply{codeID: idHex, verifiedAtMs: at, atMs: at}},
		{"reactivated", reactivate, r(statusOK, raw), applyReply{codeID: idHex, atMs: at}},
		{"already used", verify, r(statusOK, raw+"CODE_ALREADY_USED|1750000000123"),
			applyReply{errorCode: "CODE_ALREADY_USED", codeID: idHex, verifiedAtMs: vat, atMs: at}},
		{"already unused", reactivate, r(statusOK, raw+"CODE_ALREADY_UNUSED|"),
			applyReply{errorCode: "CODE_ALREADY_UNUSED", codeID: idHex, atMs: at}},
		{"a raw id holding the separators", verify, r(statusOK, oddID+"CODE_DISABLED|"),
			applyReply{errorCode: "CODE_DISABLED", codeID: "207c7c7c7c7c7c7c7c7c7c7c7c7c7c7c", atMs: at}},
		{"stored", verify, r(statusIdemReplayed, "1750000000123|1790000000001||"+raw),
			applyReply{status: statusIdemReplayed, codeID: idHex, verifiedAtMs: vat, atMs: first}},
		{"stored refusal", reactivate, r(statusIdemReplayed, "0|1790000000001|CODE_ALREADY_UNUSED|"+raw),
			applyReply{status: statusIdemReplayed, errorCode: "CODE_ALREADY_UNUSED", codeID: idHex, atMs: first}},
		{"stored not found", verify, r(statusIdemReplayed, "0|1790000000001|CODE_NOT_FOUND|"),
			applyReply{status: statusIdemReplayed, errorCode: "CODE_NOT_FOUND", atMs: first}},
	}
	for _, tc := range cases {
		got, err := decodeApply(tc.reply, tc.op)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}

	for _, bad := range []interface{}{
		nil, int64(statusOK), "", raw, []interface{}{}, []interface{}{int64(statusOK)},
		[]interface{}{"0", raw}, []interface{}{int64(statusOK), raw, "x"}, []interface{}{int64(statusOK), int64(1)},
		r(statusRateLimited, ""), r(statusUnchanged, ""), r(-1, ""), r(9, ""), r(statusCodeMiss, raw),
		r(statusIdemConflict, "x"),
		r(statusOK, "0"), r(statusOK, "short"), r(statusOK, raw[:15]), r(statusOK, raw+"X"), r(statusOK, raw+"|1"),
		r(statusOK, raw+"CODE_EXPIRED|x"), r(statusOK, raw+"CODE_EXPIRED|-1"),
		r(statusIdemReplayed, ""), r(statusIdemReplayed, "x"), r(statusIdemReplayed, "1|2|E"),
		r(statusIdemReplayed, "1|x|E|"+raw), r(statusIdemReplayed, "1|2|E|"+raw[:15]), r(statusIdemReplayed, "1||E|"+raw),
		r(statusIdemReplayed, "-1|2|E|"+raw), r(statusIdemReplayed, "E|nothex|1|2"), r(statusIdemReplayed, "E|"+idHex+"|1"),
		r(statusIdemReplayed, "E|"+idHex+"|1|2|3"),
		1.5, true, []byte(raw),
	} {
		got, err := decodeApply(bad, verify)
		if err == nil {
			t.Errorf("%q: decoded %+v without an error", bad, got)
		} else if !strings.Contains(err.Error(), "acv_apply") {
			t.Errorf("%q: error %q does not name the script", bad, err)
		}
	}
}
