// Command tidal-explain asks tidal-engine why a workload is where it is (the Explain RPC).
//
//	tidal-explain [--engine unix:///PATH|HOST:PORT] [--timeout 2s] [--tls-ca F --tls-cert F --tls-key F] WORKLOAD...
//	tidal-explain --wait-partial 10s WORKLOAD...
//
// WORKLOAD is a gang "namespace/gang" or a pod "namespace/name". Prints the engine's text for each;
// exits 1 when the engine cannot be reached, 2 on bad usage, 3 when the engine knows none of them.
//
// --wait-partial D polls (every millisecond or so) until one of the gangs holds a plan that is only
// partly reserved ("plan: ..., N slots, M reserved" with 0 < M < N: some members wait in Permit for
// the others), prints that gang's text and exits 0; exits 4 when D passes first. The e2e kill test
// uses it to kill the engine exactly while a gang is being scheduled.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"k8s.io/klog/v2"

	tidalv1 "github.com/tidal-sched/tidal/shim/kube/gen/tidal/v1"
	"github.com/tidal-sched/tidal/shim/kube/pkg/engineclient"
)

func main() {
	addr := flag.String("engine", engineclient.DefaultAddress, "tidal-engine address: unix:///PATH or HOST:PORT")
	timeout := flag.Duration("timeout", 2*time.Second, "timeout of each call")
	waitPartial := flag.Duration("wait-partial", 0, "poll until a gang's plan is partly reserved (0: explain once)")
	var files engineclient.TLSFiles
	flag.StringVar(&files.CAFile, "tls-ca", "", "mutual TLS: the CA of the engine's certificate (PEM)")
	flag.StringVar(&files.CertFile, "tls-cert", "", "mutual TLS: client certificate (PEM)")
	flag.StringVar(&files.KeyFile, "tls-key", "", "mutual TLS: client key (PEM)")
	flag.StringVar(&files.ServerName, "tls-server-name", "", "the name in the engine's certificate (default: the address's host)")
	insecure := flag.Bool("insecure", false, "allow plaintext to an engine address that is not a unix socket or loopback")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: tidal-explain [--engine ADDR] [--timeout D] NAMESPACE/GANG|NAMESPACE/POD...\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	c, err := engineclient.New(engineclient.Config{Address: *addr, Timeout: *timeout, TLS: files, Insecure: *insecure},
		klog.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "tidal-explain:", err)
		os.Exit(2)
	}
	defer c.Close()
	if *waitPartial > 0 {
		os.Exit(waitForPartial(c, flag.Args(), *waitPartial))
	}
	known := 0
	for _, w := range flag.Args() {
		resp, err := c.Explain(context.Background(), w)
		if err != nil {
			fmt.Fprintln(os.Stderr, "tidal-explain:", c.Describe(err))
			os.Exit(1)
		}
		if resp.GetStatus().GetCode() != tidalv1.Status_SUCCESS {
			fmt.Printf("%s: %s\n", w, strings.Join(resp.GetStatus().GetReasons(), "; "))
			continue
		}
		known++
		fmt.Print(resp.GetText())
		if !strings.HasSuffix(resp.GetText(), "\n") {
			fmt.Println()
		}
	}
	if known == 0 {
		os.Exit(3)
	}
}

var planLine = regexp.MustCompile(`(?m)^plan: .*, (\d+) slots, (\d+) reserved`)

func waitForPartial(c *engineclient.Client, workloads []string, d time.Duration) int {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		for _, w := range workloads {
			resp, err := c.Explain(context.Background(), w)
			if err != nil || resp.GetStatus().GetCode() != tidalv1.Status_SUCCESS {
				continue
			}
			if m := planLine.FindStringSubmatch(resp.GetText()); m != nil {
				slots, _ := strconv.Atoi(m[1])
				reserved, _ := strconv.Atoi(m[2])
				if reserved > 0 && reserved < slots {
					fmt.Print(resp.GetText())
					return 0
				}
			}
		}
		time.Sleep(500 * time.Microsecond)
	}
	fmt.Fprintf(os.Stderr, "tidal-explain: no partly reserved plan within %v\n", d)
	return 4
}
