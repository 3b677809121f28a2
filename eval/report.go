package eval

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Summary counts a suite's verdicts.
type Summary struct {
	Passed int `json:"passed"`
	Failed int `json:"failed"`
}

// Summarize counts results.
func Summarize(rs []Result) Summary {
	var s Summary
	for _, r := range rs {
		if r.Pass {
			s.Passed++
		} else {
			s.Failed++
		}
	}
	return s
}

// WriteTable writes one line per case and, under a failed one, why.
func WriteTable(w io.Writer, rs []Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CASE\tRESULT\tCHECKS\tTOKENS\tCOST\tTIME")
	for _, r := range rs {
		passed := 0
		for _, c := range r.Checks {
			if c.Pass {
				passed++
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%d\t$%.4f\t%s\n", r.Case, verdict(r.Pass), passed, len(r.Checks), r.Tokens, r.CostUSD, r.Duration.Round(time.Millisecond))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range rs {
		if r.Pass {
			continue
		}
		fmt.Fprintf(w, "\n✗ %s\n", r.Case)
		if r.Error != "" {
			fmt.Fprintf(w, "    run: %s\n", r.Error)
		}
		for _, c := range r.Checks {
			if !c.Pass {
				fmt.Fprintf(w, "    %s: %s\n", c.Assertion, c.Reason)
			}
		}
	}
	s := Summarize(rs)
	_, err := fmt.Fprintf(w, "\n%d passed, %d failed\n", s.Passed, s.Failed)
	return err
}

func verdict(pass bool) string {
	if pass {
		return "✓ pass"
	}
	return "✗ fail"
}

// WriteJSON writes the results as one JSON document.
func WriteJSON(w io.Writer, rs []Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Summary Summary  `json:"summary"`
		Results []Result `json:"results"`
	}{Summarize(rs), rs})
}

// JUnit XML, as CI systems read it: one testsuite, a testcase per case,
// a failure element naming what failed.
type junitSuites struct {
	XMLName xml.Name   `xml:"testsuites"`
	Suites  []junitSet `xml:"testsuite"`
}

type junitSet struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Body    string `xml:",chardata"`
}

// WriteJUnit writes the results as JUnit XML; name names the suite.
func WriteJUnit(w io.Writer, name string, rs []Result) error {
	set := junitSet{Name: name, Tests: len(rs)}
	var total time.Duration
	for _, r := range rs {
		total += r.Duration
		c := junitCase{Name: r.Case, Classname: name, Time: seconds(r.Duration), SystemOut: r.Answer}
		if !r.Pass {
			set.Failures++
			var why []string
			if r.Error != "" {
				why = append(why, "run: "+r.Error)
			}
			for _, ch := range r.Checks {
				if !ch.Pass {
					why = append(why, ch.Assertion+": "+ch.Reason)
				}
			}
			c.Failure = &junitFailure{Message: why[0], Body: strings.Join(why, "\n")}
		}
		set.Cases = append(set.Cases, c)
	}
	set.Time = seconds(total)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(junitSuites{Suites: []junitSet{set}}); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

// WriteComparison writes the results of the same suite against two
// manifests (a and b, named so) side by side, case by case.
func WriteComparison(w io.Writer, nameA, nameB string, a, b []Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "CASE\t%s\t%s\tTOKENS A→B\tCOST A→B\tTIME A→B\n", nameA, nameB)
	for i := range a {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d→%d\t$%.4f→$%.4f\t%s→%s\n", a[i].Case, verdict(a[i].Pass), verdict(b[i].Pass),
			a[i].Tokens, b[i].Tokens, a[i].CostUSD, b[i].CostUSD, a[i].Duration.Round(time.Millisecond), b[i].Duration.Round(time.Millisecond))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	sa, sb := Summarize(a), Summarize(b)
	_, err := fmt.Fprintf(w, "\n%s: %d passed, %d failed; %s: %d passed, %d failed\n", nameA, sa.Passed, sa.Failed, nameB, sb.Passed, sb.Failed)
	return err
}
