// Package termtext makes text that agentpool did not write itself (model
// output, tool output, stored titles and names, error messages) safe to
// print on a terminal.
//
// A terminal acts on the control characters in what it is given: ESC
// starts escape sequences (OSC 52 writes the clipboard, CSI moves the
// cursor, erases the screen or asks the terminal to answer on its input),
// the C1 controls U+0080–U+009F, sent as UTF-8, do the same on terminals
// that honour them (U+009B is CSI, U+009D is OSC), and a bare carriage
// return or backspace lets later text overwrite what was shown. Text and
// Line return a string in which none of them is left:
//
//   - a line feed and a tab are kept by Text (Line turns them into
//     spaces), and CR LF becomes LF;
//   - every other C0 control and DEL is shown as its Unicode control
//     picture: ESC as ␛ (U+241B), BEL as ␇, CR as ␍, backspace as ␈,
//     NUL as ␀, DEL as ␡;
//   - a C1 control is shown as ␛ followed by the character of its 7-bit
//     form: U+009B (CSI) as "␛[", U+009D (OSC) as "␛]";
//   - a byte that is not UTF-8 is U+FFFD.
//
// Everything else is kept as it is, so text that has no control
// character comes back unchanged (and without an allocation). The result
// never contains a byte below 0x20 but line feed and tab, nor DEL, nor a
// C1 control, nor invalid UTF-8: a terminal shows it and acts on nothing
// in it. The caller adds its own colours and cursor moves around it.
//
// Writer applies Text to a stream (a command's stderr), and JSONWriter
// escapes the C1 controls of JSON text as \u0080–\u009f, which leaves
// every JSON value as it was (encoding/json escapes the C0 controls
// already, not C1).
package termtext
