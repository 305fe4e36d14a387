package ledger

import (
	"reflect"
	"testing"
	"time"
)

// TestSameAnswerReadsEveryField: two records that differ in any one field
// but Latency are not the same answer; in Latency alone they are. A field
// added to Record and not to sameAnswer fails here.
func TestSameAnswerReadsEveryField(t *testing.T) {
	base := genRecords(1, 40)[0]
	base.Tags = map[string]string{"team": "a"}
	base.FallbackReasons = []string{"p/m: 500"}
	if !base.sameAnswer(&base) {
		t.Fatal("a record is not the same answer as itself")
	}
	rt := reflect.TypeFor[Record]()
	for i := range rt.NumField() {
		f := rt.Field(i)
		other := base
		other.Tags = map[string]string{"team": "a"}
		other.FallbackReasons = []string{"p/m: 500"}
		changeField(t, reflect.ValueOf(&other).Elem().Field(i))
		same := base.sameAnswer(&other)
		if want := f.Name == "Latency"; same != want {
			t.Errorf("records differing in %s: sameAnswer = %v, want %v", f.Name, same, want)
		}
	}
}

// changeField sets v to a value other than the one it has.
func changeField(t *testing.T, v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(v.String() + "x")
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Int, reflect.Int64:
		v.SetInt(v.Int() + 1)
	case reflect.Float64:
		v.SetFloat(v.Float() + 1)
	case reflect.Slice:
		v.Set(reflect.Append(v, reflect.ValueOf("another")))
	case reflect.Map:
		v.SetMapIndex(reflect.ValueOf("another"), reflect.ValueOf("tag"))
	case reflect.Struct:
		tm, ok := v.Addr().Interface().(*time.Time)
		if !ok {
			t.Fatalf("no way to change a %s", v.Type())
		}
		*tm = tm.Add(time.Second)
	default:
		t.Fatalf("no way to change a %s", v.Type())
	}
}
