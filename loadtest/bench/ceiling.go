package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"

	"github.com/acv/acv/api/contract"
	"github.com/gin-gonic/gin"
)

// serveCeiling is the HTTP ceiling: a bare Gin handler on the verify route that parses the
// body and answers a result, with no authentication and no store. Whatever the service does on
// top of this is what its ratio to the ceiling measures.
func serveCeiling(addr string) error {
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	e.POST("/api/v1/projects/:project_id/codes/verify", func(c *gin.Context) {
		body, err := io.ReadAll(io.LimitReader(c.Request.Body, contract.MaxBodyBytes+1))
		if err != nil {
			c.AbortWithStatus(http.StatusBadRequest)
			return
		}
		var req contract.VerifyRequest
		if err := json.Unmarshal(body, &req); err != nil {
			c.AbortWithStatus(http.StatusBadRequest)
			return
		}
		id := "01a20000000000000000000000000000"
		at := int64(1_800_000_000)
		c.JSON(http.StatusOK, contract.VerifyResponse{Success: true, CodeID: &id, Code: req.Code, VerifiedAt: &at, Message: "Code verified successfully"})
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return http.Serve(ln, e)
}
