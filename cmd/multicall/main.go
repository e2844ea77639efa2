// Command multicall is the one binary of the project; it runs the applet
// named by the name it was invoked as (see internal/dispatch).
package main

import (
	"context"
	"os"

	"github.com/claude-sandbox/claude-sandbox/internal/cli"
	"github.com/claude-sandbox/claude-sandbox/internal/dispatch"
)

func main() {
	stdio := cli.Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}
	os.Exit(dispatch.Main(context.Background(), table, os.Args, stdio))
}
