package seqworker

import (
	"reflect"
	"testing"
	"time"

	"github.com/skillbus/skillbus/pkg/events"
)

// TestPolicyState: every field of an entry's state but its version, names
// and write time goes to the overlap policy and back unchanged, so a field
// added to events.ScheduleState and not to overlap.State fails here.
func TestPolicyState(t *testing.T) {
	var st events.ScheduleState
	v := reflect.ValueOf(&st).Elem()
	at := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Bool:
			f.SetBool(true)
		case reflect.String:
			f.SetString(v.Type().Field(i).Name)
		case reflect.Int, reflect.Int64:
			f.SetInt(int64(i + 1))
		case reflect.Slice:
			el := reflect.New(f.Type().Elem()).Elem()
			for j := range el.NumField() {
				switch ef := el.Field(j); ef.Kind() {
				case reflect.String:
					ef.SetString(el.Type().Field(j).Name)
				default:
					ef.Set(reflect.ValueOf(at.Add(time.Duration(j) * time.Minute)))
				}
			}
			f.Set(reflect.Append(reflect.MakeSlice(f.Type(), 0, 1), el))
		case reflect.Struct:
			f.Set(reflect.ValueOf(at.Add(time.Duration(i) * time.Hour)))
		default:
			t.Fatalf("field %s of kind %s: teach this test to fill it", v.Type().Field(i).Name, f.Kind())
		}
	}
	back := events.ScheduleState{V: st.V, Sequence: st.Sequence, Entry: st.Entry, UpdatedAt: st.UpdatedAt}
	setPolicyState(&back, policyState(&st))
	if !reflect.DeepEqual(back, st) {
		bv := reflect.ValueOf(back)
		for i := range v.NumField() {
			if !reflect.DeepEqual(bv.Field(i).Interface(), v.Field(i).Interface()) {
				t.Errorf("field %s: %v after the overlap policy's state; want %v", v.Type().Field(i).Name, bv.Field(i).Interface(), v.Field(i).Interface())
			}
		}
	}
}
