package verifiers

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// numbersOracle is NumbersIn's rule written literally: remove every '$'
// and ',', then take every match of the number pattern.
func numbersOracle(text string) []float64 {
	clean := strings.NewReplacer("$", "", ",", "").Replace(text)
	var out []float64
	for _, m := range numberPattern.FindAllString(clean, -1) {
		f, _ := strconv.ParseFloat(m, 64)
		out = append(out, f)
	}
	return out
}

var numberPattern = regexp.MustCompile(`-?[0-9]+(?:\.[0-9]+)?`)

func TestNumbersIn(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []float64
	}{
		{"empty", "", nil},
		{"no digits", "abc", nil},
		{"minus alone", "-", nil},
		{"minus before letter", "-x", nil},
		{"dollars and thousands", "$507,500.00", []float64{507500}},
		{"cents", "$1,234.50", []float64{1234.5}},
		{"plain", "507500", []float64{507500}},
		{"negative", "down -42 today", []float64{-42}},
		{"negative fraction", "-0.75", []float64{-0.75}},
		{"dollar after minus", "-$5", []float64{-5}},
		{"dollar before minus", "$-5", []float64{-5}},
		{"comma joins digits", "1,234", []float64{1234}},
		{"comma between minus and digit", "-,5", []float64{-5}},
		{"comma between point and digit", "1.,5", []float64{1.5}},
		{"comma before point", "1,.5", []float64{1.5}},
		{"list joined by commas", "1, 2, 3", []float64{1, 2, 3}},
		{"two points", "1.2.3", []float64{1.2, 3}},
		{"trailing point", "7.", []float64{7}},
		{"leading point", ".5", []float64{5}},
		{"double minus", "--5", []float64{-5}},
		{"minus inside", "3-4", []float64{3, -4}},
		{"letters around", "abc12def3.5x", []float64{12, 3.5}},
		{"version", "v2", []float64{2}},
		{"exponent is not read", "1e5", []float64{1, 5}},
		{"leading zeros", "007", []float64{7}},
		{"negative zero", "-0", []float64{math.Copysign(0, -1)}},
		{"unicode digits are not read", "٣ and ３", nil},
		{"sentence", "The weighted total is $507,500.00 (up 3.5%).", []float64{507500, 3.5}},
		{"huge", "1" + strings.Repeat("0", 400), []float64{math.Inf(1)}},
		{"long with commas", strings.Repeat("1,", 70) + "1", []float64{mustParseFloat(t, strings.Repeat("1", 71))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := NumbersIn(tt.in)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("NumbersIn(%q) (-want +got):\n%s", tt.in, diff)
			}
			if oracle := numbersOracle(tt.in); !sameFloats(got, oracle) {
				t.Errorf("NumbersIn(%q) = %v, regexp reads %v", tt.in, got, oracle)
			}
		})
	}
}

func TestAppendNumbersIn(t *testing.T) {
	dst := make([]float64, 1, 8)
	dst[0] = 99
	got := AppendNumbersIn(dst, "$1 and $2")
	if want := []float64{99, 1, 2}; !sameFloats(got, want) {
		t.Errorf("AppendNumbersIn([99], ...) = %v, want %v", got, want)
	}
	if allocs := testing.AllocsPerRun(100, func() { dst = AppendNumbersIn(dst[:0], "$507,500.00 and -1,2.,5") }); allocs != 0 {
		t.Errorf("AppendNumbersIn allocates %v times, want 0", allocs)
	}
}

func TestStatesNumber(t *testing.T) {
	tests := []struct {
		text  string
		value float64
		tol   float64
		want  bool
	}{
		{"$507,500.00", 507500, DefaultTolerance, true},
		{"507500", 507500, DefaultTolerance, true},
		{"507501", 507500, DefaultTolerance, false},
		{"about 507500.005", 507500, DefaultTolerance, true},
		{"about 507500.02", 507500, DefaultTolerance, false},
		{"1,234.50", 1234.5, DefaultTolerance, true},
		{"-5 degrees", -5, DefaultTolerance, true},
		{"5 degrees", -5, DefaultTolerance, false},
		{"first 1 then 2", 2, 0, true},
		{"nothing", 0, DefaultTolerance, false},
		{"", 0, DefaultTolerance, false},
		{"0", math.NaN(), DefaultTolerance, false},
		{"0", 0, math.NaN(), false},
	}
	for _, tt := range tests {
		if got := StatesNumber(tt.text, tt.value, tt.tol); got != tt.want {
			t.Errorf("StatesNumber(%q, %v, %v) = %v, want %v", tt.text, tt.value, tt.tol, got, tt.want)
		}
	}
	if allocs := testing.AllocsPerRun(100, func() { StatesNumber("total: $1,234,567.89 or so", 1234567.89, DefaultTolerance) }); allocs != 0 {
		t.Errorf("StatesNumber allocates %v times, want 0", allocs)
	}
}

func TestNearestNumber(t *testing.T) {
	tests := []struct {
		text   string
		value  float64
		want   float64
		wantOK bool
	}{
		{"", 10, 0, false},
		{"none here", 10, 0, false},
		{"3", 10, 3, true},
		{"1 then 9 then 12", 10, 9, true},
		{"8 or 12", 10, 8, true}, // equally near: the first wins
		{"12 or 8", 10, 12, true},
		{"$507,501", 507500, 507501, true},
		{"-3 and 2", -2, -3, true},
	}
	for _, tt := range tests {
		got, ok := NearestNumber(tt.text, tt.value)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("NearestNumber(%q, %v) = %v, %v, want %v, %v", tt.text, tt.value, got, ok, tt.want, tt.wantOK)
		}
	}
}

func FuzzNumbersIn(f *testing.F) {
	for _, s := range []string{
		"", "abc", "-", "$507,500.00", "$1,234.50", "1.2.3", "-$5", "$-5", "1.,5",
		"--5", "3-4", "a1b2.c3", ".5.", "-,.,5", "1,.,5", "\xff9.\xfe1", "0.0.0.-0",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		got, want := NumbersIn(text), numbersOracle(text)
		if !sameFloats(got, want) {
			t.Fatalf("NumbersIn(%q) = %v, regexp reads %v", text, got, want)
		}
		for _, v := range want {
			if math.IsInf(v, 0) {
				continue // Inf - Inf is NaN: an infinity is never within a tolerance
			}
			if !StatesNumber(text, v, 0) {
				t.Fatalf("StatesNumber(%q, %v, 0) = false, want true", text, v)
			}
		}
	})
}

func mustParseFloat(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// sameFloats reports whether a and b hold the same float64 bit patterns
// (so -0 differs from 0), treating nil and empty alike.
func sameFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}
