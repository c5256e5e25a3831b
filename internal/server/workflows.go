package server

import (
	"errors"
	"io"
	"net/http"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/workflow"
)

// maxWorkflowBody bounds a workflow document sent for validation.
const maxWorkflowBody = 4 << 20

// WorkflowValidation is POST /v2/workflows:validate's answer: every error of the document, each
// with its code, JSON pointer and line:column in the body as sent.
type WorkflowValidation struct {
	Valid  bool             `json:"valid"`
	Errors []workflow.Error `json:"errors"`
}

func (s *Server) workflowRoutes(v2 *http.ServeMux) {
	v2.HandleFunc("POST /v2/workflows:validate", s.validateWorkflow)
	v2.HandleFunc("GET /v2/agentruns/{name}/nodes", s.runNodes)
}

// validateWorkflow checks the body, a workflow document; ?runnable=true also refuses what this
// server does not run yet. An invalid document is a 200 with its errors: the request worked.
func (s *Server) validateWorkflow(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxWorkflowBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeErr(w, api.E(api.CodeTooLarge, "", "the workflow is over %d bytes", maxWorkflowBody))
			return
		}
		writeErr(w, api.Errorf(http.StatusBadRequest, api.CodeInvalid, "", "read body: %v", err))
		return
	}
	_, errs := workflow.Validate(body, workflow.Options{Runnable: r.URL.Query().Get("runnable") == "true"})
	out := WorkflowValidation{Valid: len(errs) == 0, Errors: []workflow.Error(errs)}
	if out.Errors == nil {
		out.Errors = []workflow.Error{}
	}
	writeJSON(w, http.StatusOK, out)
}
