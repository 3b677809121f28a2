package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

// rejectUnknownCommands makes every command group under root (a command
// with subcommands and no action of its own: sessions, serve) refuse a word
// that names none of its subcommands, the way cobra's root does: exit 1
// with `unknown command "X" for "agentpool sessions"` and the close names.
// Without it cobra treats such a group as not runnable and prints its help
// with exit 0 (scripts cannot tell), and a flag after the unknown word
// fails as "unknown flag", which hides the real mistake. A group alone
// still prints its help.
func rejectUnknownCommands(root *cobra.Command) {
	for _, c := range root.Commands() {
		rejectUnknownCommands(c)
	}
	if !root.HasParent() || !root.HasSubCommands() || root.Runnable() {
		return // cobra's root checks its own words (legacyArgs)
	}
	root.Args = unknownCommand
	root.DisableFlagsInUseLine = true // it has no action to take flags
	root.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	if root.Annotations == nil {
		root.Annotations = map[string]string{}
	}
	root.Annotations[annotationNoProcesses] = "true"
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		// pflag keeps the words it read before the bad flag.
		if words := cmd.Flags().Args(); len(words) > 0 {
			return unknownCommand(cmd, words)
		}
		return err
	})
}

// unknownCommand refuses any word given to a command group.
func unknownCommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2 // cobra's root's
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "\n\nDid you mean this?"
		for _, name := range s {
			msg += "\n\t" + name
		}
	}
	return fmt.Errorf("%s\n\nRun '%s --help' for its commands", msg, cmd.CommandPath())
}
