package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// healthz answers as long as the process serves HTTP.
func healthz(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{"status": "ok"})
}
