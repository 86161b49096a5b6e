package console

import (
	"context"

	"github.com/acv/acv/api/contract"
)

// RewrapKeys seals every API key's secret with the active master key (admin only), as the
// server holds the master keys and an operator's machine does not, and records the counts.
func (s *Service) RewrapKeys(ctx context.Context, a Actor) (contract.RewrapResult, string, error) {
	ad, err := s.operator(a, RoleAdmin)
	if err != nil {
		return contract.RewrapResult{}, "", err
	}
	res, err := ad.RewrapKeys(ctx)
	if rerr := s.record(ctx, a, "keys.rewrap", "api_key", "", "", map[string]any{
		"sealed": res.Sealed, "rewrapped": res.Rewrapped, "current": res.Current, "failed": res.Failed,
	}); rerr != nil && err == nil {
		err = rerr
	}
	return res, ad.ActiveKeyID(), err
}
