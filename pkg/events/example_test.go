package events_test

import (
	"fmt"

	"github.com/skillbus/skillbus/pkg/events"
)

func ExampleKeyFor() {
	fmt.Println(events.KeyFor("repo-survey"))
	fmt.Println(events.KeyFor("repo survey"))
	name, _ := events.NameForKey(events.KeyFor("repo survey"))
	fmt.Println(name)
	// Output:
	// repo-survey
	// =cmVwbyBzdXJ2ZXk
	// repo survey
}

func ExampleTokenFor() {
	subj, _ := events.RunSubject("开机自检")
	fmt.Println(events.TokenFor("repo-survey"))
	fmt.Println(events.TokenFor("开机自检"))
	fmt.Println(subj)
	name, _ := events.NameOfSubject(subj)
	fmt.Println(name)
	// Output:
	// repo-survey
	// =5byA5py66Ieq5qOA
	// seq.run.=5byA5py66Ieq5qOA
	// 开机自检
}

func ExampleEncode() {
	b, _ := events.Encode(&events.AgentReady{Agent: "support-bot", BootID: "7f3a"})
	fmt.Println(string(b))
	// Output: {"v":1,"agent":"support-bot","boot_id":"7f3a"}
}
