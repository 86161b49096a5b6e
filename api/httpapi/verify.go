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
	"github.com/acv/acv/cache"
	"github.com/acv/acv/internal/admin"
	"github.com/acv/acv/store"
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

func (s *Server) verify(c *gin.Context)     { s.operate(c, contract.ActionVerify) }
func (s *Server) reactivate(c *gin.Context) { s.operate(c, contract.ActionReactivate) }

// operate runs one verify or reactivate: validate, one Lua call (loading a code or project
// Redis has not seen from Postgres first), and the result body. The outcome is always a 200
// when the request itself was valid; refusals of the request are the contract's statuses.
func (s *Server) operate(c *gin.Context, action contract.Action) {
	key := keyOf(c)
	body := c.MustGet(ctxBody).([]byte)
	req, detail := parseOpBody(body, action)
	if detail != "" {
		abort(c, http.StatusBadRequest, detail)
		return
	}
	idem, hasIdem := c.Request.Header["Idempotency-Key"]
	call := cache.Call{
		Action:    action,
		ProjectID: key.ProjectID,
		KeyID:     key.ID,
		Code:      *req.Code,
		IP:        c.ClientIP(),
		ReplayKey: c.GetString(ctxReplay),
		Limit:     limitOf(key),
		EventID:   s.cfg.NewEventID(),
		Now:       s.cfg.Now(),
	}
	if hasIdem {
		if err := contract.ValidateIdempotencyKey(idem[0]); err != nil {
			abort(c, http.StatusBadRequest, err.Error())
			return
		}
		call.IdempotencyKey = idem[0]
		h := sha256.Sum256([]byte(c.Request.Method + "\n" + c.FullPath() + "\n" + c.GetString(ctxBodyH)))
		call.RequestHash = hex.EncodeToString(h[:])
	}
	switch action {
	case contract.ActionVerify:
		call.By = deref(req.VerifiedBy)
	case contract.ActionReactivate:
		call.By, call.Reason = deref(req.ReactivatedBy), deref(req.Reason)
	}
	r, err := s.apply(c.Request.Context(), call)
	if err != nil {
		s.fail(c, "apply "+string(action), err)
		return
	}
	if r.Status == cache.StatusIdemConflict {
		s.metrics.idemReplays.WithLabelValues("conflict").Inc()
		setRateHeaders(c, key, r.Rate.Remaining)
		abort(c, http.StatusConflict, "Idempotency-Key was already used with a different request")
		return
	}
	if !s.admitted(c, key, r) {
		return
	}
	if r.Status == cache.StatusIdemReplayed {
		c.Header("Idempotent-Replayed", "true")
		s.metrics.idemReplays.WithLabelValues("replayed").Inc()
	} else {
		s.countOutcome(r.Outcome)
	}
	c.Set(ctxOutcome, r.Outcome)
	if action == contract.ActionVerify {
		renderVerify(c, r.Outcome.VerifyResponse())
		return
	}
	renderReactivate(c, r.Outcome.ReactivateResponse())
}

const ctxOutcome = "acv.outcome"

// apply runs the script, loading the code or project into Redis when the script reports it
// missing. Loads never overwrite a state Redis already holds, so racing loads are harmless.
func (s *Server) apply(ctx context.Context, call cache.Call) (cache.Result, error) {
	for attempt := 0; attempt < 4; attempt++ {
		start := time.Now()
		sctx, span := s.tracer.Start(ctx, "redis apply.lua", trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(attribute.String("db.system", "redis"), attribute.String("acv.action", string(call.Action))))
		call.TraceParent = traceParent(sctx)
		r, err := s.cfg.HotPath.Apply(sctx, call)
		span.SetAttributes(attribute.Int("acv.script.status", int(r.Status)))
		span.End()
		s.metrics.script.WithLabelValues("apply").Observe(time.Since(start).Seconds())
		if err != nil {
			return r, err
		}
		switch r.Status {
		case cache.StatusCodeMiss:
			if err := s.loadCode(ctx, call.ProjectID, call.Code); err != nil {
				return r, err
			}
		case cache.StatusProjectMiss:
			if err := s.loadProject(ctx, call.ProjectID); err != nil {
				return r, err
			}
		default:
			return r, nil
		}
	}
	return cache.Result{}, errors.New("code state did not settle in redis after loading")
}

func (s *Server) loadCode(ctx context.Context, projectID, value string) error {
	row, err := s.cfg.Records.CodeByValue(ctx, projectID, value)
	if errors.Is(err, store.ErrNotFound) {
		return s.cfg.HotPath.MarkUnknown(ctx, projectID, value, 0)
	}
	if err != nil {
		return fmt.Errorf("load code from postgres: %w", err)
	}
	_, err = s.cfg.HotPath.PutCode(ctx, projectID, admin.CodeState(row))
	return err
}

func (s *Server) loadProject(ctx context.Context, projectID string) error {
	p, err := s.cfg.Records.Project(ctx, projectID)
	if err != nil {
		return fmt.Errorf("load project from postgres: %w", err)
	}
	return s.cfg.HotPath.LoadProject(ctx, cache.ProjectState{ID: p.ID, Enabled: p.Status, ExpiresAt: p.ExpiresAt})
}

// parseOpBody decodes and validates a verify or reactivate body; a non-empty string is the
// 400 detail.
func parseOpBody(body []byte, action contract.Action) (opBody, string) {
	var b opBody
	if len(bytes.TrimSpace(body)) == 0 {
		return b, "Request body must be a JSON object with a code"
	}
	// Unmarshal accepts exactly one JSON value: trailing data is a syntax error.
	if err := json.Unmarshal(body, &b); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field == "" {
			return b, "Request body must be a JSON object with a code"
		}
		if errors.As(err, &te) {
			return b, fmt.Sprintf("Field %s must be a %s", te.Field, jsonType(te.Type.String()))
		}
		return b, "Malformed JSON body"
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
		max  int
	}{
		{"verified_by", b.VerifiedBy, contract.MaxByLen},
		{"reactivated_by", b.ReactivatedBy, contract.MaxByLen},
		{"reason", b.Reason, contract.MaxReasonLen},
	} {
		if f.v == nil {
			continue
		}
		if err := contract.ValidateText(f.name, *f.v, f.max); err != nil {
			return b, err.Error()
		}
	}
	return b, ""
}

func jsonType(goType string) string {
	if goType == "*string" || goType == "string" {
		return "string"
	}
	return goType
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// countOutcome records a fresh verify or reactivate outcome.
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

// traceParent is the W3C traceparent of ctx's span, carried with the log event through the
// outbox and Kafka so the consumer's write joins this request's trace; "" when not sampled.
func traceParent(ctx context.Context) string {
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	return carrier["traceparent"]
}
