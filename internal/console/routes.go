package console

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// Route is one endpoint of the admin API and what it demands of a request.
type Route struct {
	Method string
	Path   string // under APIPrefix
	// Need is the least role that may call it; "" for Anonymous.
	Need Role
	// Anonymous routes need no session (the login and the API's OpenAPI document).
	Anonymous bool
	// DuringPasswordChange routes are open to a session whose account must change its
	// password first (the change itself, reading who one is, logging out); every other route
	// answers such a session 403.
	DuringPasswordChange bool
	// MaxBody is the most its request body may hold, 413 past it; ServerConfig.MaxBodyBytes
	// when 0.
	MaxBody int64

	handler func(*gin.Context, *Session) error
}

// Routes lists every endpoint with the role it needs: the API's reference, and the table the
// tests refuse every role below it from.
func (s *Server) Routes() []Route {
	rs := s.routes()
	for i := range rs {
		rs[i].handler = nil
	}
	return rs
}

func (s *Server) routes() []Route {
	const (
		get, post, put, del = http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete
	)
	return []Route{
		{Method: get, Path: "/openapi.yaml", Anonymous: true, handler: s.openAPIDoc},
		{Method: post, Path: "/session", Anonymous: true, MaxBody: loginBodyBytes, handler: s.login},
		{Method: del, Path: "/session", Need: RoleViewer, DuringPasswordChange: true, handler: s.logout},
		{Method: get, Path: "/me", Need: RoleViewer, DuringPasswordChange: true, handler: s.me},
		{Method: post, Path: "/me/password", Need: RoleViewer, DuringPasswordChange: true, handler: s.changePassword},

		{Method: get, Path: "/projects", Need: RoleViewer, handler: s.listProjects},
		{Method: post, Path: "/projects", Need: RoleOperator, handler: s.createProject},
		{Method: get, Path: "/projects/:project_id", Need: RoleViewer, handler: s.getProject},
		{Method: get, Path: "/projects/:project_id/statistics", Need: RoleViewer, handler: s.getStatistics},
		{Method: post, Path: "/projects/:project_id/enable", Need: RoleOperator, handler: s.enableProject},
		{Method: post, Path: "/projects/:project_id/disable", Need: RoleOperator, handler: s.disableProject},
		{Method: put, Path: "/projects/:project_id/expiry", Need: RoleOperator, handler: s.setExpiry},
		{Method: del, Path: "/projects/:project_id/expiry", Need: RoleOperator, handler: s.clearExpiry},

		{Method: get, Path: "/projects/:project_id/keys", Need: RoleViewer, handler: s.listKeys},
		{Method: post, Path: "/projects/:project_id/keys", Need: RoleOperator, handler: s.createKey},
		{Method: post, Path: "/keys/:key_id/revoke", Need: RoleOperator, handler: s.revokeKey},
		{Method: put, Path: "/keys/:key_id/limit", Need: RoleOperator, handler: s.limitKey},
		{Method: post, Path: "/keys/rewrap", Need: RoleAdmin, handler: s.rewrapKeys},

		{Method: get, Path: "/projects/:project_id/codes", Need: RoleViewer, handler: s.listCodes},
		{Method: get, Path: "/projects/:project_id/codes/:code", Need: RoleViewer, handler: s.getCode},
		{Method: post, Path: "/projects/:project_id/codes/:code/disable", Need: RoleSupport, handler: s.disableCode},
		{Method: post, Path: "/projects/:project_id/codes/:code/enable", Need: RoleSupport, handler: s.enableCode},
		{Method: post, Path: "/projects/:project_id/codes/:code/verify", Need: RoleSupport, handler: s.manualVerify},
		{Method: post, Path: "/projects/:project_id/codes/:code/reactivate", Need: RoleSupport, handler: s.manualReactivate},
		{Method: get, Path: "/projects/:project_id/bulk-disable", Need: RoleOperator, handler: s.bulkCount},
		{Method: post, Path: "/projects/:project_id/bulk-disable", Need: RoleOperator, handler: s.bulkDisable},
		{Method: post, Path: "/projects/:project_id/generate", Need: RoleOperator, handler: s.generate},
		{Method: get, Path: "/projects/:project_id/batches", Need: RoleViewer, handler: s.listBatches},
		{Method: get, Path: "/projects/:project_id/batches/:batch_id", Need: RoleViewer, handler: s.getBatch},
		{Method: post, Path: "/projects/:project_id/batches/:batch_id/cancel", Need: RoleOperator, handler: s.cancelBatch},
		{Method: post, Path: "/projects/:project_id/batches/:batch_id/revoke", Need: RoleOperator, handler: s.revokeBatch},
		{Method: post, Path: "/projects/:project_id/import", Need: RoleOperator, MaxBody: s.cfg.MaxImportBytes, handler: s.importCodes},
		{Method: get, Path: "/projects/:project_id/export", Need: RoleOperator, handler: s.export},

		{Method: get, Path: "/logs", Need: RoleViewer, handler: s.listLogs},
		{Method: get, Path: "/logs.csv", Need: RoleOperator, handler: s.exportLogs},
		{Method: get, Path: "/logs/partitions", Need: RoleViewer, handler: s.listLogPartitions},
		{Method: post, Path: "/logs/maintain", Need: RoleAdmin, handler: s.maintainLogs},

		{Method: get, Path: "/audit", Need: RoleViewer, handler: s.listAudit},
		{Method: get, Path: "/audit.csv", Need: RoleOperator, handler: s.exportAudit},
		{Method: get, Path: "/audit/verify", Need: RoleViewer, handler: s.verifyAudit},
		{Method: post, Path: "/audit/prune", Need: RoleAdmin, handler: s.pruneAudit},

		{Method: get, Path: "/accounts", Need: RoleAdmin, handler: s.listAccounts},
		{Method: post, Path: "/accounts", Need: RoleAdmin, handler: s.createAccount},
		{Method: post, Path: "/accounts/:admin_id/disable", Need: RoleAdmin, handler: s.disableAccount},
		{Method: post, Path: "/accounts/:admin_id/enable", Need: RoleAdmin, handler: s.enableAccount},
		{Method: put, Path: "/accounts/:admin_id/role", Need: RoleAdmin, handler: s.setAccountRole},
		{Method: post, Path: "/accounts/:admin_id/reset-password", Need: RoleAdmin, handler: s.resetPassword},

		{Method: get, Path: "/tokens", Need: RoleViewer, handler: s.listTokens},
		{Method: post, Path: "/tokens", Need: RoleViewer, handler: s.createToken},
		{Method: post, Path: "/tokens/:token_id/revoke", Need: RoleViewer, handler: s.revokeToken},
	}
}

// chain is a route's handlers, in the order a request is refused: no session 401, a password
// still to change 403, a role too low 403; only then is the body read, at most the route's
// MaxBody (413 past it, boundBody): a cookie session's missing or wrong CSRF token 403 (a form may carry it), a
// query not UTF-8 400 (requireUTF8); then the handler. An anonymous route bounds its body at
// once.
func (s *Server) chain(r Route) []gin.HandlerFunc {
	limit := s.bodyLimit(r.MaxBody)
	if r.Anonymous {
		h := r.handler
		return []gin.HandlerFunc{s.handle(func(c *gin.Context) error {
			boundBody(c, limit)
			if err := requireUTF8(c); err != nil {
				return err
			}
			return h(c, nil)
		})}
	}
	return []gin.HandlerFunc{s.handle(func(c *gin.Context) error {
		se, err := s.session(c)
		if err != nil {
			return err
		}
		// A token does not hang on the password: the one-time password binds browser logins.
		if se.Account.MustChangePassword && se.apiToken == nil && !r.DuringPasswordChange {
			return errMustChange
		}
		if err := se.Actor("").require(r.Need); err != nil {
			return err
		}
		boundBody(c, limit)
		if err := checkCSRF(c, se); err != nil {
			return err
		}
		if err := requireUTF8(c); err != nil {
			return err
		}
		return r.handler(c, se)
	})}
}
