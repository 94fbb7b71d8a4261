// Command turnsgen writes N multi-turn chats in the messages format (JSON
// Lines of OpenAI chat messages), for the turns benchmark of make bench:
// chat i has 6 + i%15 agent turns (6 to 20), each answering a user
// message; every other turn calls a tool and gets its result.
//
//	turnsgen -n 200000 -out chats.jsonl
//	gavel grade --from messages --spec bench/turns/turn-checks.yaml chats.jsonl
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"strconv"
)

func main() {
	n := flag.Int("n", 200000, "number of `CHATS`")
	out := flag.String("out", "", "output `FILE`")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "usage: turnsgen -n N -out FILE")
		os.Exit(2)
	}
	f, err := os.Create(*out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "turnsgen:", err)
		os.Exit(1)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var b []byte
	for i := range *n {
		b = chat(b[:0], i)
		w.Write(b)
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, "turnsgen:", err)
		os.Exit(1)
	}
	if err := f.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "turnsgen:", err)
		os.Exit(1)
	}
}

// chat appends chat i, one line.
func chat(b []byte, i int) []byte {
	turns := 6 + i%15
	b = fmt.Appendf(b, `{"rollout_id":"c%d","task_id":"support-%d","model":"model-%c","messages":[`, i, i%50, 'a'+i%3)
	b = append(b, `{"role":"system","content":"You are a support agent. Confirm the account before acting."}`...)
	for k := range turns {
		b = fmt.Appendf(b, `,{"role":"user","content":"Request %d, step %d: what is the status of order %d?"}`, i, k, 1000+i%977)
		if k%2 == 0 {
			id := "call_" + strconv.Itoa(i) + "_" + strconv.Itoa(k)
			b = fmt.Appendf(b, `,{"role":"assistant","content":"Let me look up order %d.","tool_calls":[{"id":%q,"type":"function","function":{"name":"get_order","arguments":"{\"order_id\": %d, \"fields\": [\"status\", \"eta\"]}"}}]}`, 1000+i%977, id, 1000+i%977)
			b = fmt.Appendf(b, `,{"role":"tool","tool_call_id":%q,"content":"{\"status\": \"shipped\", \"eta\": \"2026-12-%02d\"}"}`, id, 1+k)
			continue
		}
		b = fmt.Appendf(b, `,{"role":"assistant","content":"Order %d has shipped and should arrive on December %d. Is there anything else I can help with today?"}`, 1000+i%977, k)
	}
	return append(b, "]}\n"...)
}
