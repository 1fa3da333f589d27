// `probe`: what a Go guest can reach through husk's preview 1 adapter, for
// the adapter's tests (it is not one of the five conformance examples).
// Input {"try": T, ...}:
//   - "files": reads /etc/passwd and ".", writes a file; output each error;
//   - "env": output the environment's and the arguments' lengths;
//   - "sockets": dials {"addr"} over TCP and listens on 127.0.0.1:0; output each error;
//   - "sleep": sleeps {"ms"}, then outputs {"slept_ms": ...} measured on time.Now;
//   - "goroutines": {"n"} goroutines sleeping 1 ms each and sending on a channel;
//   - "alloc": keeps {"mb"} megabytes live;
//   - "print": writes {"bytes"} bytes to stdout and a line to stderr;
//   - "panic": panics with "probe panics".
package export_wit_world

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	witTypes "go.bytecodealliance.org/pkg/wit/types"
	"wit_component/husk_worker_types"
)

type input struct {
	Try   string `json:"try"`
	Addr  string `json:"addr"`
	Ms    int    `json:"ms"`
	N     int    `json:"n"`
	Mb    int    `json:"mb"`
	Bytes int    `json:"bytes"`
}

// errText is err's message, "" for none.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

var kept [][]byte

func Execute(job husk_worker_types.Job) witTypes.Result[[]byte, husk_worker_types.Fault] {
	var in input
	if err := json.Unmarshal(job.Input, &in); err != nil {
		return fault("invalid-input", map[string]string{"error": err.Error()})
	}
	switch in.Try {
	case "files":
		_, read := os.ReadFile("/etc/passwd")
		_, list := os.ReadDir(".")
		write := os.WriteFile("probe.txt", []byte("x"), 0o644)
		_, stat := os.Stat("/")
		return ok(map[string]string{"read": errText(read), "list": errText(list), "write": errText(write), "stat": errText(stat)})
	case "env":
		return ok(map[string]int{"environ": len(os.Environ()), "args": len(os.Args)})
	case "sockets":
		_, dial := net.DialTimeout("tcp", in.Addr, time.Second)
		_, listen := net.Listen("tcp", "127.0.0.1:0")
		_, lookup := net.LookupHost("localhost")
		return ok(map[string]string{"dial": errText(dial), "listen": errText(listen), "lookup": errText(lookup)})
	case "sleep":
		start := time.Now()
		time.Sleep(time.Duration(in.Ms) * time.Millisecond)
		return ok(map[string]int64{"slept_ms": time.Since(start).Milliseconds()})
	case "goroutines":
		done := make(chan int, in.N)
		for i := 0; i < in.N; i++ {
			go func(i int) {
				time.Sleep(time.Millisecond)
				done <- i
			}(i)
		}
		sum := 0
		for i := 0; i < in.N; i++ {
			sum += <-done
		}
		return ok(map[string]int{"sum": sum})
	case "alloc":
		for i := 0; i < in.Mb; i++ {
			block := make([]byte, 1<<20)
			for j := range block {
				block[j] = byte(i + j)
			}
			kept = append(kept, block)
		}
		return ok(map[string]int{"mb": len(kept)})
	case "print":
		fmt.Print(strings.Repeat("o", in.Bytes))
		fmt.Fprintln(os.Stderr, "probe to stderr")
		return ok(map[string]int{"printed": in.Bytes})
	case "panic":
		panic("probe panics")
	}
	return fault("invalid-input", map[string]string{"error": "unknown try " + in.Try})
}
