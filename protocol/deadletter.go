package protocol

// DeadLetterLine is one refused input as a team keeps it: a line of the
// team directory's deadletter.jsonl, or an entry of a store's dead
// letters. Source is where the input was read (inbox/<member>.jsonl,
// exec:<member>, restart/<member>), Offset where in it, Raw the input cut
// to 4 KiB.
type DeadLetterLine struct {
	TS     string `json:"ts"`
	Source string `json:"source"`
	Offset int64  `json:"offset"`
	Reason string `json:"reason"`
	Raw    string `json:"raw"`
}
