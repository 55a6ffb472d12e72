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

func ExampleEncode() {
	b, _ := events.Encode(&events.AgentReady{Agent: "support-bot", BootID: "7f3a"})
	fmt.Println(string(b))
	// Output: {"v":1,"agent":"support-bot","boot_id":"7f3a"}
}
