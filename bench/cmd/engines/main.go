// Command engines compares the JavaScript engines run_code could embed
// (docs/performance.md, "Code mode's engine"): goja (the default build)
// and QuickJS (modernc.org/quickjs, QuickJS translated to Go; built with
// -tags quickjs). Its own module, so that neither engine it measures
// enters the product's go.mod through it.
//
//	go build -o /tmp/eng-goja . && go build -tags quickjs -o /tmp/eng-qjs .
//	/tmp/eng-goja -compare /tmp/eng-goja,/tmp/eng-qjs
//
// -compare starts each binary -runs times with -eval 1 (a fresh process,
// its runtime made, one program run: a cold runner's start) and prints
// the median wall time of a start and the median peak RSS (VmHWM) of a
// process, then each engine's ES features (-features) and the time of a
// compute-bound program (-compute).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

// settled runs src and returns its value, a promise's settled value, as
// a string: String(value), or "error: " and the reason.
func settled(run func(string) (string, error), src string) (string, error) {
	if _, err := run("globalThis.__r = 'pending'; Promise.resolve(eval(" + strconv.Quote(src) + ")).then(v => { globalThis.__r = String(v) }, e => { globalThis.__r = 'error: ' + e })"); err != nil {
		return "", err
	}
	return run("globalThis.__r")
}

// features are the ES features checked: each program's value must be
// true.
var features = []struct{ name, src string }{
	{"let/const, arrow functions, template literals", "(() => { const a = 1; let b = `${a}`; return b === '1' })()"},
	{"classes", "class A { constructor() { this.x = 1 } get y() { return 2 } }; new A().x + new A().y === 3"},
	{"private class fields (ES2022)", "class A { #x = 1; get x() { return this.#x } }; new A().x === 1"},
	{"static class blocks (ES2022)", "class A { static y; static { A.y = 3 } }; A.y === 3"},
	{"destructuring, spread, rest", "(() => { const {a, ...r} = {a: 1, b: 2}; const [x, ...y] = [1, 2, 3]; return a + r.b + x + y.length === 6 })()"},
	{"generators", "(function*(){ yield 1; yield 2 })().next().value === 1"},
	{"async/await (awaited in the job queue)", "(async () => { const v = await Promise.resolve(2); return v === 2 })()"},
	{"async iteration (for await)", "(async () => { let s = 0; for await (const v of [1, 2]) s += v; return s === 3 })()"},
	{"optional chaining (ES2020)", "({a: null}).a?.b === undefined"},
	{"nullish coalescing (ES2020)", "(null ?? 5) === 5"},
	{"logical assignment (ES2021)", "(() => { let a = null; a ??= 4; return a === 4 })()"},
	{"numeric separators (ES2021)", "1_000 === 1000"},
	{"BigInt (ES2020)", "(2n ** 64n).toString() === '18446744073709551616'"},
	{"Map, Set, WeakMap, Symbol", "new Map([[1, 2]]).get(1) === 2 && new Set([1, 1]).size === 1 && typeof Symbol() === 'symbol' && new WeakMap() instanceof WeakMap"},
	{"Proxy, Reflect", "new Proxy({}, {get: () => 7}).x === 7 && Reflect.has({a: 1}, 'a')"},
	{"regexp named groups, lookbehind, s flag", "/(?<y>\\d+)/.exec('a12').groups.y === '12' && /(?<=a)b/.test('ab') && /a.b/s.test('a\\nb')"},
	{"Array.prototype.flat, Object.fromEntries (ES2019)", "[[1], [2]].flat().length === 2 && Object.fromEntries([['a', 1]]).a === 1"},
	{"String.prototype.replaceAll (ES2021)", "'aa'.replaceAll('a', 'b') === 'bb'"},
	{"Array.prototype.at, Object.hasOwn (ES2022)", "[1, 2].at(-1) === 2 && Object.hasOwn({a: 1}, 'a')"},
	{"Array.prototype.findLast, toSorted (ES2023)", "[1, 2, 3].findLast(x => x < 3) === 2 && [3, 1].toSorted()[0] === 1"},
	{"Object.groupBy (ES2024)", "Object.groupBy([1, 2, 3], x => x % 2 ? 'odd' : 'even').odd.length === 2"},
	{"Promise.allSettled, Promise.any", "typeof Promise.allSettled === 'function' && typeof Promise.any === 'function'"},
	{"WeakRef, FinalizationRegistry (ES2021)", "typeof WeakRef === 'function' && typeof FinalizationRegistry === 'function'"},
	{"Intl.NumberFormat", "typeof Intl === 'object' && new Intl.NumberFormat('en').format(1234) === '1,234'"},
	{"JSON, Math, Date", "JSON.stringify({a: [1]}) === '{\"a\":[1]}' && Math.max(1, 2) === 2 && !isNaN(Date.now())"},
}

// objects is a program that holds 100,000 small objects: its peak RSS
// is the engine's heap per object.
const objects = "let a = []; for (let i = 0; i < 100000; i++) a.push({i, s: 'x' + i}); a.length"

// compute is a CPU-bound program: fib(25) recursively.
const compute = "function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2) }; fib(25)"

func main() {
	eval := flag.String("eval", "", "run this program in a fresh runtime, print its value and this process's peak RSS")
	feats := flag.Bool("features", false, "print which ES features the engine has")
	comp := flag.Bool("compute", false, "print the time of a compute-bound program")
	cmp := flag.String("compare", "", "BIN1,BIN2: compare the engines these binaries embed")
	runs := flag.Int("runs", 30, "starts of each binary for -compare")
	flag.Parse()
	switch {
	case *eval != "":
		run, end := newEngine()
		v, err := settled(run, *eval)
		end()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Printf("%s %s %d\n", engineName, v, statusKiB("VmHWM"))
	case *feats:
		for _, f := range features {
			run, end := newEngine()
			v, err := settled(run, f.src)
			end()
			if v != "true" {
				fmt.Fprintf(os.Stderr, "%s: %s: %v %v\n", engineName, f.name, v, err)
			}
			fmt.Printf("%s\t%v\n", f.name, err == nil && v == "true")
		}
	case *comp:
		run, end := newEngine()
		start := time.Now()
		_, err := run(compute)
		fmt.Printf("%v %v\n", time.Since(start).Round(time.Microsecond), err)
		end()
	case *cmp != "":
		compare(strings.Split(*cmp, ","), *runs)
	default:
		flag.Usage()
		os.Exit(2)
	}
}

// compare prints the figures of each binary in bins.
func compare(bins []string, runs int) {
	table := map[string]map[string]bool{}
	for _, bin := range bins {
		var took []time.Duration
		var hwm []int
		var name string
		for range runs {
			start := time.Now()
			out, err := exec.Command(bin, "-eval", "1").Output()
			took = append(took, time.Since(start))
			if err != nil {
				fmt.Fprintln(os.Stderr, bin, err)
				os.Exit(1)
			}
			f := strings.Fields(string(out))
			name = f[0]
			k, _ := strconv.Atoi(f[2])
			hwm = append(hwm, k)
		}
		slices.Sort(took)
		slices.Sort(hwm)
		fi, _ := os.Stat(bin)
		comp, _ := exec.Command(bin, "-compute").Output()
		big, _ := exec.Command(bin, "-eval", objects).Output()
		bigKiB := 0
		if f := strings.Fields(string(big)); len(f) == 3 {
			bigKiB, _ = strconv.Atoi(f[2])
		}
		fmt.Printf("%s: start (exec, runtime, program 1, exit) p50 %v, min %v; peak RSS p50 %.1f MiB, holding 100,000 objects %.1f MiB; binary %.1f MiB; fib(25) %s",
			name, took[len(took)/2].Round(10*time.Microsecond), took[0].Round(10*time.Microsecond), float64(hwm[len(hwm)/2])/1024,
			float64(bigKiB)/1024, float64(fi.Size())/(1<<20), comp)
		cmd := exec.Command(bin, "-features")
		cmd.Stderr = os.Stderr
		out, _ := cmd.Output()
		table[name] = map[string]bool{}
		sc := bufio.NewScanner(strings.NewReader(string(out)))
		for sc.Scan() {
			k, v, _ := strings.Cut(sc.Text(), "\t")
			table[name][k] = v == "true"
		}
	}
	fmt.Println()
	fmt.Println("| feature | goja | quickjs |")
	fmt.Println("|---|---|---|")
	for _, f := range features {
		fmt.Printf("| %s | %s | %s |\n", f.name, yes(table["goja"][f.name]), yes(table["quickjs"][f.name]))
	}
}

// yes is ok as the table prints it.
func yes(ok bool) string {
	if ok {
		return "yes"
	}
	return "no"
}

// statusKiB is the value of the line key of /proc/self/status, in KiB.
func statusKiB(key string) int {
	b, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k == key {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return n
		}
	}
	return 0
}
