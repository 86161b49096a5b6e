package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// opBody is the union of the verify and reactivate bodies; pointers tell absent from empty.
type opBody struct {
	Code          *string `json:"code"`
	VerifiedBy    *string `json:"verified_by"`
	ReactivatedBy *string `json:"reactivated_by"`
	Reason        *string `json:"reason"`
}

func (s *Server) verify(c *gin.Context) error {
	return s.operate(c, contract.ActionVerify, s.cfg.HotPath.Verify)
}

func (s *Server) reactivate(c *gin.Context) error {
	return s.operate(c, contract.ActionReactivate, s.cfg.HotPath.Reactivate)
}

// operate runs one verify or reactivate: validate, one hot-path call, a 200 with any outcome.
func (s *Server) operate(c *gin.Context, action contract.Action,
	run func(context.Context, contract.Operation) (contract.OperationResult, error)) error {
	key := keyOf(c)
	body := c.MustGet(ctxBody).([]byte)
	req, detail := parseOpBody(body, action)
	if detail != "" {
		return invalid(detail)
	}
	op := contract.Operation{Action: action, ProjectID: key.ProjectID, KeyID: key.ID, Code: *req.Code,
		IP: c.ClientIP(), ReplayKey: c.GetString(ctxReplay), Limit: key.Limit(), EventID: s.newEventID(), Now: s.now(),
		By: deref(req.VerifiedBy)}
	if action == contract.ActionReactivate {
		op.By, op.Reason = deref(req.ReactivatedBy), deref(req.Reason)
	}
	if idem, ok := c.Request.Header["Idempotency-Key"]; ok {
		if err := contract.ValidateIdempotencyKey(idem[0]); err != nil {
			return invalid(err.Error())
		}
		op.IdempotencyKey = idem[0]
		h := sha256.Sum256([]byte(c.Request.Method + "\n" + c.FullPath() + "\n" + c.GetString(ctxBodyH)))
		op.RequestHash = hex.EncodeToString(h[:])
	}
	start := time.Now()
	// A span for the Redis call only when the request's is recorded (else it costs for nothing).
	ctx, span := c.Request.Context(), trace.Span(nil)
	if trace.SpanFromContext(ctx).IsRecording() {
		ctx, span = s.tracer.Start(ctx, "redis apply.lua", trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(attribute.String("db.system", "redis"), attribute.String("acv.action", string(action))))
		op.TraceParent = traceParent(ctx)
	}
	r, err := run(ctx, op)
	if span != nil {
		span.End()
	}
	s.metrics.script.WithLabelValues("apply").Observe(time.Since(start).Seconds())
	if err := s.bucketAnswered(c, key, r.Rate, err); err != nil {
		return err
	}
	if r.Replayed {
		c.Header("Idempotent-Replayed", "true")
		s.metrics.idemReplays.WithLabelValues("replayed").Inc()
	} else {
		s.countOutcome(r.Outcome)
	}
	c.Set(ctxOutcome, r.Outcome)
	c.Data(http.StatusOK, "application/json; charset=utf-8", r.Outcome.AppendBody(make([]byte, 0, 256)))
	return nil
}

func parseOpBody(body []byte, action contract.Action) (opBody, string) {
	var b opBody
	if len(bytes.TrimSpace(body)) == 0 {
		return b, "Request body must be a JSON object with a code"
	}
	// Unmarshal accepts exactly one JSON value: trailing data is a syntax error.
	if err := json.Unmarshal(body, &b); err != nil {
		var te *json.UnmarshalTypeError
		switch {
		case !errors.As(err, &te):
			return b, "Malformed JSON body"
		case te.Field == "":
			return b, "Request body must be a JSON object with a code"
		case te.Type.String() == "*string" || te.Type.String() == "string":
			return b, "Field " + te.Field + " must be a string"
		}
		return b, fmt.Sprintf("Field %s must be a %s", te.Field, te.Type)
	}
	if b.Code == nil {
		return b, "Field code is required"
	}
	if err := contract.ValidateCode(*b.Code); err != nil {
		return b, err.Error()
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{"verified_by", b.VerifiedBy}, {"reactivated_by", b.ReactivatedBy}} {
		if f.v == nil {
			continue
		}
		if err := contract.ValidateBy(f.name, *f.v); err != nil {
			return b, err.Error()
		}
	}
	if b.Reason != nil {
		if err := contract.ValidateText("reason", *b.Reason, contract.MaxReasonLen); err != nil {
			return b, err.Error()
		}
	}
	return b, ""
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func (s *Server) countOutcome(o contract.Outcome) {
	outcome := "success"
	if !o.Success() {
		outcome = string(o.Error)
	}
	s.metrics.outcomes.WithLabelValues(string(o.Action), outcome).Inc()
	if o.Error == contract.CodeNotFound {
		s.metrics.unknownCodes.WithLabelValues(string(o.Action)).Inc()
	}
}

// traceParent is the W3C traceparent of ctx's span, carried with the log event so the
// consumer's write joins this request's trace; "" when the span is not sampled.
func traceParent(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsSampled() {
		return ""
	}
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	return carrier["traceparent"]
}
