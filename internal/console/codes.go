package console

import (
	"context"
	"io"

	"github.com/acv/acv/api/contract"
)

// ListCodes reads one page of a project's codes with the client API's filters: state, search
// (a substring of the value), page and page size (viewer and above). It is the store's list,
// the one the client API and acv codes list read.
func (s *Service) ListCodes(ctx context.Context, a Actor, projectID string, q contract.ListQuery) (contract.CodePage, error) {
	ad, err := s.operator(a, RoleViewer)
	if err != nil {
		return contract.CodePage{}, err
	}
	return ad.ListCodes(ctx, projectID, q, s.now().Unix())
}

// ListCodesAfter reads one keyset page of a project's codes (viewer and above): the same
// filters as ListCodes, a cursor instead of a page number, so deep pages cost what the first
// does and codes created meanwhile shift no page.
func (s *Service) ListCodesAfter(ctx context.Context, a Actor, projectID string, q contract.CursorQuery) (contract.CursorPage, error) {
	ad, err := s.operator(a, RoleViewer)
	if err != nil {
		return contract.CursorPage{}, err
	}
	return ad.ListCodesAfter(ctx, projectID, q, s.now().Unix())
}

// Code reads one code by its value, with its live state and its verification history (viewer
// and above).
func (s *Service) Code(ctx context.Context, a Actor, projectID, value string) (contract.CodeWithHistory, error) {
	ad, err := s.operator(a, RoleViewer)
	if err != nil {
		return contract.CodeWithHistory{}, err
	}
	return ad.Code(ctx, projectID, value, s.now().Unix())
}

// SetCodeDisabled disables or enables one code, at once on the hot path (support and above).
func (s *Service) SetCodeDisabled(ctx context.Context, a Actor, projectID, value string, disabled bool) error {
	ad, err := s.operator(a, RoleSupport)
	if err != nil {
		return err
	}
	if err := ad.SetCodeDisabled(ctx, projectID, value, disabled); err != nil {
		return err
	}
	action := "code.enable"
	if disabled {
		action = "code.disable"
	}
	return s.record(ctx, a, action, "code", value, projectID, nil)
}

// Import reads codes from CSV into a project (operator and above), as acv codes import does:
// the good rows are imported, the others skipped and reported by line (admin.ImportCSV). A dry
// run checks every row and writes nothing, so it changes nothing to record; a real import is
// recorded with its totals, whatever stopped it.
func (s *Service) Import(ctx context.Context, a Actor, projectID string, r io.Reader, dryRun bool) (contract.ImportReport, error) {
	ad, err := s.operator(a, RoleOperator)
	if err != nil {
		return contract.ImportReport{}, err
	}
	rep, err := ad.ImportCSV(ctx, projectID, r, contract.ImportOptions{DryRun: dryRun})
	if dryRun || (err != nil && rep.Read == 0) {
		return rep, err
	}
	detail := map[string]any{"read": rep.Read, "inserted": rep.Inserted, "duplicates": rep.Duplicates,
		"existing": rep.Existing, "invalid": rep.Invalid, "complete": err == nil}
	if rerr := s.record(ctx, a, "codes.import", "project", projectID, projectID, detail); rerr != nil && err == nil {
		err = rerr
	}
	return rep, err
}

// Export writes every code of a project as CSV to w, streamed from PostgreSQL (operator and
// above). The export is recorded before the first byte leaves: no export goes unrecorded.
func (s *Service) Export(ctx context.Context, a Actor, projectID string, w io.Writer) (int, error) {
	ad, err := s.operator(a, RoleOperator)
	if err != nil {
		return 0, err
	}
	if _, err := ad.Project(ctx, projectID, s.now().Unix()); err != nil {
		return 0, err
	}
	if err := s.record(ctx, a, "codes.export", "project", projectID, projectID, map[string]any{"format": "csv"}); err != nil {
		return 0, err
	}
	return ad.ExportCSV(ctx, projectID, s.now().Unix(), w)
}

// ExportReady checks what Export checks before it writes anything — the role, the project —
// so an HTTP handler can still answer an error status instead of a truncated file.
func (s *Service) ExportReady(ctx context.Context, a Actor, projectID string) error {
	ad, err := s.operator(a, RoleOperator)
	if err != nil {
		return err
	}
	_, err = ad.Project(ctx, projectID, s.now().Unix())
	return err
}
