import Foundation
import Synchronization
import Testing

@testable import Engine

/// Every bound of `JinjaLimits` stops a hostile template quickly with its typed error: no hang,
/// no memory blow-up, no stack overflow. Most cases run under `small` bounds (the same code
/// paths, a fraction of the CPU, so these tests do not starve suites running beside them);
/// `theDefaultsStopABillionIterationsQuickly` checks the server's own bounds once.
@Suite struct JinjaLimitsTests {
    static let small: JinjaLimits = {
        var limits = JinjaLimits()
        limits.maxSteps = 200_000
        limits.maxLoopIterations = 20_000
        limits.maxOutputBytes = 256 << 10
        limits.maxValueSize = 128 << 10
        return limits
    }()

    /// Renders `source` and returns the error and how long it took to fail.
    func failure(_ source: String, limits: JinjaLimits = small) -> (JinjaError?, Duration) {
        let start = ContinuousClock.now
        do {
            _ = try JinjaTestSupport.render(source, limits: limits)
            return (nil, ContinuousClock.now - start)
        } catch {
            return (error, ContinuousClock.now - start)
        }
    }

    func expectBound(
        _ bound: JinjaLimits.Bound, _ source: String, limits: JinjaLimits = small,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let (error, elapsed) = failure(source, limits: limits)
        guard case .limitExceeded(let hit, _)? = error else {
            Issue.record(
                "expected the \(bound) bound, got \(String(describing: error))", sourceLocation: sourceLocation)
            return
        }
        #expect(hit == bound, sourceLocation: sourceLocation)
        #expect(elapsed < .seconds(10), "took \(elapsed)", sourceLocation: sourceLocation)
    }

    @Test func theDefaultsStopABillionIterationsQuickly() {
        let (error, elapsed) = failure("{% for i in range(1000000000) %}{% endfor %}", limits: JinjaLimits())
        #expect(error == .limitExceeded(.loopIterations, limit: JinjaLimits().maxLoopIterations))
        #expect(elapsed < .seconds(10), "took \(elapsed)")
    }

    @Test func aBillionIterationsStopAtTheLoopBound() {
        expectBound(.loopIterations, "{% for i in range(1000000000) %}x{% endfor %}")
        expectBound(
            .loopIterations,
            "{% for a in range(1000) %}{% for b in range(1000) %}{% for c in range(1000) %}{% endfor %}{% endfor %}{% endfor %}"
        )
        // Filtering loops count too.
        expectBound(
            .loopIterations, "{% for a in range(10000) %}{% for b in range(10000) if b < 0 %}{% endfor %}{% endfor %}"
        )
    }

    @Test func stepsBoundWorkInsideFewIterations() {
        var limits = Self.small
        limits.maxSteps = 10_000
        expectBound(.steps, "{% for i in range(5000) %}{{ i + i * i - i // 3 }}{% endfor %}", limits: limits)
        // Big string operations cost steps by their size.
        limits.maxSteps = 20_000
        expectBound(
            .steps, "{% set s = 'x' * 100000 %}{% for i in range(100) %}{% set t = s | upper %}{% endfor %}",
            limits: limits)
    }

    @Test func deepNestingStopsAtTheNestingBound() {
        let depth = 100_000
        expectBound(
            .nesting, "{{ " + String(repeating: "(", count: depth) + "1" + String(repeating: ")", count: depth) + " }}")
        expectBound(
            .nesting, "{{ " + String(repeating: "[", count: depth) + String(repeating: "]", count: depth) + " }}")
        expectBound(.nesting, "{{ " + String(repeating: "not ", count: depth) + "x }}")
        expectBound(.nesting, "{{ " + String(repeating: "- ", count: depth) + "1 }}")
        expectBound(.nesting, "{{ x" + String(repeating: ".a", count: depth) + " }}")
        expectBound(.nesting, "{{ x" + String(repeating: " | trim", count: depth) + " }}")
        expectBound(
            .nesting, String(repeating: "{% if true %}", count: depth) + String(repeating: "{% endif %}", count: depth))
        expectBound(
            .nesting,
            String(repeating: "{% for x in [1] %}", count: depth) + String(repeating: "{% endfor %}", count: depth))
    }

    @Test func valuesNestedInALoopStopAtTheNestingBound() {
        // Each iteration wraps the list once more; printing a million-deep list would overflow the stack.
        expectBound(
            .nesting,
            "{% set ns = namespace(l=[]) %}{% for i in range(1000) %}{% set ns.l = [ns.l] %}{% endfor %}{{ ns.l }}")
        expectBound(
            .nesting,
            "{% set ns = namespace(d={}) %}{% for i in range(1000) %}{% set ns.d = {'k': ns.d} %}{% endfor %}{{ ns.d | tojson }}"
        )
        expectBound(
            .nesting,
            "{% set ns = namespace(d={}) %}{% for i in range(1000) %}{% set ns.d = dict(k=ns.d) %}{% endfor %}")
        // A namespace holding itself prints and serializes without looping forever.
        let (error, _) = failure("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}{{ ns | tojson }}")
        guard case .limitExceeded(.nesting, _)? = error else {
            Issue.record("expected the nesting bound from tojson, got \(String(describing: error))")
            return
        }
    }

    @Test func hugeRangesAndSlicesDoNotOverflow() throws {
        #expect(try JinjaTestSupport.render("{{ range(0, 9223372036854775807, 9223372036854775807) | list }}") == "[0]")
        #expect(try JinjaTestSupport.render("{{ range(5, 9223372036854775807, 9223372036854775806) | length }}") == "1")
        #expect(try JinjaTestSupport.render("{{ [1, 2, 3][::9223372036854775807] }}") == "[1]")
        #expect(try JinjaTestSupport.render("{{ [1, 2, 3][::-9223372036854775807] }}") == "[3]")
        #expect(try JinjaTestSupport.render("{{ [1, 2, 3][-9223372036854775807:] }}") == "[1, 2, 3]")
        expectBound(.loopIterations, "{% for c in 'x' * 100000 %}{% endfor %}")
    }

    @Test func recursionStopsAtTheMacroBound() {
        expectBound(.macroCalls, "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}")
        // Two macros calling each other, 10^5 deep if unbounded.
        expectBound(
            .macroCalls,
            "{% macro a(n) %}{% if n < 100000 %}{{ b(n + 1) }}{% endif %}{% endmacro %}{% macro b(n) %}{{ a(n + 1) }}{% endmacro %}{{ a(0) }}"
        )
    }

    @Test func gigabytesOfOutputStopAtTheOutputBound() {
        expectBound(.outputLength, "{% for i in range(10000) %}{{ 'x' * 100000 }}{% endfor %}")
        expectBound(.outputLength, "{% for i in range(19000) %}some literal text that repeats {% endfor %}")
    }

    @Test func hugeValuesStopAtTheValueBound() {
        expectBound(.valueSize, "{{ 'x' * 10000000000 }}")
        expectBound(.valueSize, "{{ [1, 2] * 100000000 }}")
        expectBound(
            .valueSize,
            "{% set ns = namespace(s='xy') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}")
        expectBound(
            .valueSize,
            "{% set ns = namespace(l=[1]) %}{% for i in range(64) %}{% set ns.l = ns.l + ns.l %}{% endfor %}")
        expectBound(.valueSize, "{{ ('x' * 1000000).replace('x', 'yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy') }}")
        expectBound(
            .valueSize,
            "{{ range(10000) | join('                                                                                                                                                                                                                                      ') }}"
        )
    }

    @Test func templatesAtTheNestingBoundRenderOnASmallStack() throws {
        // The deepest template the parser accepts must not overflow a 512 KiB thread stack.
        let limits = JinjaLimits()
        let depth = limits.maxNesting / 2 - 2
        let source =
            String(repeating: "{% if true %}", count: depth / 2) + "{{ " + String(repeating: "(", count: depth / 2)
            + "1" + String(repeating: ")", count: depth / 2) + " }}"
            + String(repeating: "{% endif %}", count: depth / 2)
        let result = Mutex<Result<String, JinjaError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            let value: Result<String, JinjaError>
            do throws(JinjaError) { value = .success(try JinjaTestSupport.render(source)) } catch {
                value = .failure(error)
            }
            result.withLock { $0 = value }
            done.signal()
        }
        thread.stackSize = 512 << 10
        thread.start()
        done.wait()
        #expect(try result.withLock { $0 }?.get() == "1")
        // And the macro bound with deep templates inside still fits.
        let macro = "{% macro f(n) %}" + source + "{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"
        let deep = Mutex<JinjaError?>(nil)
        let macroThread = Thread {
            do throws(JinjaError) { _ = try JinjaTestSupport.render(macro) } catch { deep.withLock { $0 = error } }
            done.signal()
        }
        macroThread.stackSize = 512 << 10
        macroThread.start()
        done.wait()
        guard case .limitExceeded? = deep.withLock({ $0 }) else {
            Issue.record("expected a bound, got \(String(describing: deep.withLock { $0 }))")
            return
        }
    }
}
