package console

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/acv/acv/api/contract"
	"github.com/gin-gonic/gin"
)

// auditRow is an audit row as the page shows it.
type auditRow struct {
	contract.AuditRecord
	Detail auditDetail
	// TargetName and ProjectName are what a person reads for the target and the project ("" when
	// only the id is known).
	TargetName, ProjectName string
}

// auditPage shows the admin audit log, newest first, filtered and paged by seq, with the
// result of verifying the whole chain.
func (s *Server) auditPage(c *gin.Context, se *Session) error {
	ctx, a := c.Request.Context(), s.actor(c, se)
	f, err := auditFilterQuery(c)
	if err != nil {
		return err
	}
	f.Limit = 100
	rows, err := s.svc.AuditLog(ctx, a, f)
	if err != nil {
		return err
	}
	rep, err := s.svc.VerifyChain(ctx)
	if err != nil {
		return err
	}
	names, ps, err := s.projectNames(c, se)
	if err != nil {
		return err
	}
	out := make([]auditRow, 0, len(rows))
	for _, r := range rows {
		out = append(out, auditRow{AuditRecord: r, Detail: describeAudit(r), TargetName: auditTargetName(r, names),
			ProjectName: names[r.ProjectID]})
	}
	var next string
	if len(rows) == f.Limit {
		next = strconv.FormatInt(rows[len(rows)-1].Seq, 10)
	}
	// The filters as given, for the other pages and the CSV.
	keep := url.Values{}
	for _, k := range []string{"admin", "action", "target_kind", "target_id", "project_id", "since", "until"} {
		if v := c.Query(k); v != "" {
			keep.Set(k, v)
		}
	}
	v := viewFor(se, "Admin audit log", "audit")
	v.Data = map[string]any{"Rows": out, "Chain": rep, "Filter": f, "CSV": "/audit.csv?" + keep.Encode(),
		"Since": c.Query("since"), "Until": c.Query("until"), "Projects": ps,
		"Pager": keysetPager(c, keep, "/audit", "before", next, len(rows), f.Limit, -1)}
	s.render(c, http.StatusOK, "audit", v)
	return nil
}

func (s *Server) accountsPage(c *gin.Context, se *Session) error {
	return s.renderAccounts(c, se, nil)
}

// renderAccounts shows the accounts; shown, when set, is an account whose one-time password
// is displayed this once (just created or reset).
func (s *Server) renderAccounts(c *gin.Context, se *Session, shown *NewAccount) error {
	accs, err := s.svc.Accounts(c.Request.Context(), s.actor(c, se))
	if err != nil {
		return err
	}
	v := viewFor(se, "Accounts", "accounts")
	v.Flash = flash(c)
	v.Data = map[string]any{"Accounts": accs, "Shown": shown, "Self": se.Account.ID}
	s.render(c, http.StatusOK, "accounts", v)
	return nil
}

func (s *Server) accountCreateSubmit(c *gin.Context, se *Session) error {
	acc, err := s.svc.CreateAccount(c.Request.Context(), s.actor(c, se), trimForm(c, "username"), Role(c.PostForm("role")))
	if err != nil {
		return err
	}
	return s.renderAccounts(c, se, &acc)
}

func (s *Server) accountDisabledSubmit(disabled bool) func(*gin.Context, *Session) error {
	return func(c *gin.Context, se *Session) error {
		if err := s.svc.SetAccountDisabled(c.Request.Context(), s.actor(c, se), c.Param("admin_id"), disabled); err != nil {
			return err
		}
		done := "account_enabled"
		if disabled {
			done = "account_disabled"
		}
		redirectDone(c, "/accounts", done, "")
		return nil
	}
}

func (s *Server) accountRoleSubmit(c *gin.Context, se *Session) error {
	if err := s.svc.SetAccountRole(c.Request.Context(), s.actor(c, se), c.Param("admin_id"), Role(c.PostForm("role"))); err != nil {
		return err
	}
	redirectDone(c, "/accounts", "role_changed", "")
	return nil
}

func (s *Server) accountResetSubmit(c *gin.Context, se *Session) error {
	acc, err := s.svc.ResetPassword(c.Request.Context(), s.actor(c, se), c.Param("admin_id"), "")
	if err != nil {
		return err
	}
	return s.renderAccounts(c, se, &acc)
}
