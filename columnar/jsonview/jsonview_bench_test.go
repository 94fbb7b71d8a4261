package jsonview

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// crmState returns a CRM-like world state with nOpp opportunities: about
// 5 KB for 30. The text is deterministic and compact, as states are stored.
func crmState(nOpp int) []byte {
	var b strings.Builder
	b.WriteString(`{"users":{`)
	names := []string{"Ada Lovelace", "Grace Hopper", "Alan Turing", "Edsger Dijkstra", "Barbara Liskov"}
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"U-%02d":{"id":"U-%02d","name":%q,"email":"%s@example.com","role":"sales","active":true}`,
			i+1, i+1, n, strings.ToLower(strings.Fields(n)[1]))
	}
	b.WriteString(`},"stages":{`)
	stages := []string{"Prospecting", "Qualification", "Proposal", "Negotiation", "Closed"}
	for i, s := range stages {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"ST-%d":{"id":"ST-%d","name":%q,"order":%d,"probability":%.2f}`, i+1, i+1, s, i+1, float64(i)/4)
	}
	b.WriteString(`},"opportunities":{`)
	companies := []string{"Acme Corp", "Globex", "Initech", "Umbrella", "Soylent", "Caf\\u00e9 Noir"}
	statuses := []string{"open", "open", "won", "lost"}
	for i := 0; i < nOpp; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"OPP-%04d":{"id":"OPP-%04d","name":"%s renewal %d","ownerId":"U-%02d","stageId":"ST-%d","status":"%s","amount":%d.5,"tags":["q%d","inbound"],"closedAt":null}`,
			i+1, i+1, companies[i%len(companies)], i+1, i%5+1, i%5+1, statuses[i%len(statuses)], 1000+i*977%50000, i%4+1)
	}
	b.WriteString(`}}`)
	return []byte(b.String())
}

// benchStates are the texts the parse benchmarks run over.
func benchStates() []struct {
	name string
	data []byte
} {
	small := crmState(30)
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, small, "", "  "); err != nil {
		panic(err)
	}
	return []struct {
		name string
		data []byte
	}{
		{"crm=5KB", small},
		{"crm=50KB", crmState(300)},
		{"crm=5KB/indented", pretty.Bytes()},
	}
}

func BenchmarkParse(b *testing.B) {
	for _, s := range benchStates() {
		b.Run(s.name, func(b *testing.B) {
			var d Doc
			if _, err := d.Parse(s.data); err != nil { // grow the buffers
				b.Fatal(err)
			}
			b.SetBytes(int64(len(s.data)))
			b.ReportAllocs()
			states := 0
			for b.Loop() {
				if _, err := d.Parse(s.data); err != nil {
					b.Fatal(err)
				}
				states++
			}
			b.ReportMetric(float64(states)/b.Elapsed().Seconds(), "states/s")
		})
	}
}

// iterate is the verifier-like read the iteration benchmarks time: every
// opportunity's owner, status and amount.
func iterate(root Value) (open int, sum float64, owners int) {
	for o := root.Get("opportunities").First(); o.Exists(); o = o.Next() {
		if id, ok := o.Get("ownerId").Str(); ok && len(id) > 0 {
			owners++
		}
		if o.Get("status").StrIs("open") {
			open++
		}
		a, _ := o.Get("amount").Float()
		sum += a
	}
	return open, sum, owners
}

func BenchmarkGetIterate(b *testing.B) {
	data := crmState(30)
	var d Doc
	root, err := d.Parse(data)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("read", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if open, _, _ := iterate(root); open == 0 {
				b.Fatal("no open opportunities")
			}
		}
	})
	b.Run("parse+read", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			root, err := d.Parse(data)
			if err != nil {
				b.Fatal(err)
			}
			if open, _, _ := iterate(root); open == 0 {
				b.Fatal("no open opportunities")
			}
		}
	})
}

// iterateMap is iterate over encoding/json's generic decoding.
func iterateMap(m map[string]any) (open int, sum float64, owners int) {
	opps, _ := m["opportunities"].(map[string]any)
	for _, o := range opps {
		o, _ := o.(map[string]any)
		if id, ok := o["ownerId"].(string); ok && id != "" {
			owners++
		}
		if s, _ := o["status"].(string); s == "open" {
			open++
		}
		a, _ := o["amount"].(float64)
		sum += a
	}
	return open, sum, owners
}

// BenchmarkEncodingJSONBaseline is the peer: the same work through
// encoding/json, decoding into map[string]any, and json.Valid, which only
// validates.
func BenchmarkEncodingJSONBaseline(b *testing.B) {
	for _, s := range benchStates() {
		b.Run("unmarshal/"+s.name, func(b *testing.B) {
			b.SetBytes(int64(len(s.data)))
			b.ReportAllocs()
			for b.Loop() {
				var m map[string]any
				if err := json.Unmarshal(s.data, &m); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("valid/"+s.name, func(b *testing.B) {
			b.SetBytes(int64(len(s.data)))
			b.ReportAllocs()
			for b.Loop() {
				if !json.Valid(s.data) {
					b.Fatal("invalid")
				}
			}
		})
	}
	data := crmState(30)
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		b.Fatal(err)
	}
	b.Run("read", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if open, _, _ := iterateMap(m); open == 0 {
				b.Fatal("no open opportunities")
			}
		}
	})
	b.Run("parse+read", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			var m map[string]any
			if err := json.Unmarshal(data, &m); err != nil {
				b.Fatal(err)
			}
			if open, _, _ := iterateMap(m); open == 0 {
				b.Fatal("no open opportunities")
			}
		}
	})
}

func TestBenchStatesAgree(t *testing.T) {
	for _, s := range benchStates() {
		root := parse(t, string(s.data))
		var m map[string]any
		if err := json.Unmarshal(s.data, &m); err != nil {
			t.Fatal(err)
		}
		o1, s1, n1 := iterate(root)
		o2, s2, n2 := iterateMap(m)
		if o1 != o2 || s1 != s2 || n1 != n2 {
			t.Errorf("%s: iterate = %d %v %d, over encoding/json %d %v %d", s.name, o1, s1, n1, o2, s2, n2)
		}
	}
	if n := len(crmState(30)); n < 4500 || n > 6000 {
		t.Errorf("crmState(30) is %d bytes, want about 5 KB", n)
	}
}
