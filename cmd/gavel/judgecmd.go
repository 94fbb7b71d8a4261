package main

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// judgeCommands are the subcommands of gavel judge, in the order the usage
// lists them.
func judgeCommands() []command {
	return []command{
		{"pairwise", "compare the outputs of groups (models) head to head, both orders, and rank them", runJudgePairwise},
	}
}

// runJudge dispatches gavel judge SUBCOMMAND.
func runJudge(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cmds := judgeCommands()
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		var b strings.Builder
		b.WriteString("Usage: gavel judge SUBCOMMAND [flags] [args]\n\nMeasures the judge and compares outputs with it.\n\nSubcommands:\n")
		for _, c := range cmds {
			fmt.Fprintf(&b, "  %-10s %s\n", c.name, c.summary)
		}
		b.WriteString("\nExamples:\n  gavel judge pairwise --rubric \"The answer is correct.\" --judge-model gpt-4o-mini --out cmp rollouts.parquet\n")
		b.WriteString("\nRun 'gavel judge SUBCOMMAND --help' for its flags and examples.\n")
		fmt.Fprint(stdout, b.String())
		if len(args) == 0 {
			return usagef("gavel judge --help", "judge: no subcommand given")
		}
		return nil
	}
	names := make([]string, len(cmds))
	for i, c := range cmds {
		if c.name == args[0] {
			return c.run(ctx, args[1:], stdout, stderr)
		}
		names[i] = c.name
	}
	return usagef("gavel judge --help", "judge: unknown subcommand %q%s", args[0], didYouMean(args[0], names, ""))
}
