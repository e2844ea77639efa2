// Command multicall is the one binary of the project; it runs the applet
// named by the name it was invoked as (see internal/multicall).
package main

import (
	"context"
	"os"

	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
)

func main() {
	stdio := multicall.Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}
	os.Exit(multicall.Main(context.Background(), table, os.Args, stdio))
}
