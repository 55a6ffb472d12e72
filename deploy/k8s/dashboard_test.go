package k8s

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestGrafanaDashboard checks grafana/skillbus-dashboard.json: valid JSON
// with unique panel ids, every query on the datasource variable, and every
// skillbus metric it queries defined by the main module's internal/metrics
// (its instrument names, as the Prometheus endpoint spells them), so a
// renamed metric cannot leave an empty panel behind.
func TestGrafanaDashboard(t *testing.T) {
	data, err := os.ReadFile("grafana/skillbus-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Title  string `json:"title"`
		UID    string `json:"uid"`
		Panels []struct {
			ID      int    `json:"id"`
			Title   string `json:"title"`
			Targets []struct {
				Expr       string `json:"expr"`
				Datasource struct {
					UID string `json:"uid"`
				} `json:"datasource"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	if d.UID == "" || len(d.Panels) == 0 {
		t.Fatal("dashboard without uid or panels")
	}
	ids := map[int]bool{}
	used := map[string][]string{} // Prometheus metric name -> panels
	metricRef := regexp.MustCompile(`\b(skillbus_[a-z0-9_]+)`)
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			if tg.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q: datasource %q, want the ${datasource} variable", p.Title, tg.Datasource.UID)
			}
			for _, m := range metricRef.FindAllStringSubmatch(tg.Expr, -1) {
				used[m[1]] = append(used[m[1]], p.Title)
			}
		}
	}

	// The instrument names of the main module, as "skillbus.runs.finished".
	dir := filepath.Join(repoRoot, "internal", "metrics")
	ents, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		t.Skipf("%s does not exist in the main module (yet): the dashboard's metric names cannot be checked until it does", dir)
	}
	if err != nil {
		t.Fatal(err)
	}
	defined := map[string]bool{} // underscored instrument names
	nameRE := regexp.MustCompile(`"(skillbus\.[a-z0-9_.]+)"`)
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		src, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range nameRE.FindAllStringSubmatch(string(src), -1) {
			defined[strings.ReplaceAll(m[1], ".", "_")] = true
		}
	}
	for metric, panels := range used {
		base := metric
		for _, suffix := range []string{"_bucket", "_count", "_sum"} {
			base = strings.TrimSuffix(base, suffix)
		}
		base = strings.TrimSuffix(strings.TrimSuffix(base, "_total"), "_seconds")
		if !defined[base] {
			t.Errorf("dashboard panels %q query %s, but internal/metrics defines no instrument %s", panels, metric, strings.ReplaceAll(base, "_", "."))
		}
	}
}
