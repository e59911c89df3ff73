// Command gin-target is the Gin server of the h2load-rs test bed (seeds 002 and 003): HTTP/1.1 and
// h2c (prior knowledge and Upgrade, via golang.org/x/net/http2/h2c) on one port, and h2 plus
// HTTP/1.1 over TLS on another.
//
// Routes: GET /ping → "pong"; GET /delay/:ms → "pong" after ms milliseconds; GET /bytes/:n → n
// bytes; POST /echo → the request body.
package main

import (
	"flag"
	"io"
	"log"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/h2c"
)

// filler is an endless source of 'x' bytes for /bytes/:n.
type filler struct{}

func (filler) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

func router() *gin.Engine {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.GET("/ping", func(c *gin.Context) { c.String(http.StatusOK, "pong") })
	r.GET("/delay/:ms", func(c *gin.Context) {
		ms, err := strconv.Atoi(c.Param("ms"))
		if err != nil {
			c.String(http.StatusBadRequest, "ms")
			return
		}
		time.Sleep(time.Duration(ms) * time.Millisecond)
		c.String(http.StatusOK, "pong")
	})
	r.GET("/bytes/:n", func(c *gin.Context) {
		n, err := strconv.ParseInt(c.Param("n"), 10, 64)
		if err != nil || n < 0 {
			c.String(http.StatusBadRequest, "n")
			return
		}
		c.DataFromReader(http.StatusOK, n, "application/octet-stream", io.LimitReader(filler{}, n), nil)
	})
	r.POST("/echo", func(c *gin.Context) {
		body, err := io.ReadAll(c.Request.Body)
		if err != nil {
			c.String(http.StatusBadRequest, "body")
			return
		}
		c.Data(http.StatusOK, "application/octet-stream", body)
	})
	return r
}

func main() {
	cleartext := flag.String("h2c", "127.0.0.1:19080", "address for HTTP/1.1 and h2c")
	secure := flag.String("tls", "127.0.0.1:19443", "address for h2 and HTTP/1.1 over TLS")
	cert := flag.String("cert", "certs/server.crt", "TLS certificate")
	key := flag.String("key", "certs/server.key", "TLS key")
	flag.Parse()

	r := router()
	go func() {
		server := &http.Server{Addr: *secure, Handler: r}
		log.Fatal(server.ListenAndServeTLS(*cert, *key))
	}()
	log.Fatal(http.ListenAndServe(*cleartext, h2c.NewHandler(r, &http2.Server{MaxConcurrentStreams: 250})))
}
