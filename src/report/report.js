/*
 * src/report/report.js — draws the page of `ltr report` from its two data
 * scripts: "analysis" (ltr analyze --format json, frames as the text report
 * shows them) and "timeline-data" (ltr export --format chrome: outstanding
 * bytes over time per process, memory counters, markers, snapshots). The
 * timeline is uPlot, the flame graph d3-flame-graph. A self-check written
 * into #selfcheck (what was drawn, the totals, errors) lets a headless
 * browser test the page (tests/e2e/test_report.c).
 */
(function () {
    "use strict";
    var check = { errors: [], timeline: false, stacks: 0, flame: 0, names: [], totals: {}, range: null };
    function publish() { document.getElementById("selfcheck").textContent = JSON.stringify(check); }
    window.addEventListener("error", function (e) { check.errors.push(String(e.message)); publish(); });
    var A = JSON.parse(document.getElementById("analysis").textContent);
    var C = JSON.parse(document.getElementById("timeline-data").textContent);

    function size(b) {
        var u = ["B", "KiB", "MiB", "GiB", "TiB"], i = 0;
        while (b >= 1024 && i < u.length - 1) { b /= 1024; i++; }
        /* as ltr_size_format (base/units.c): toPrecision(3) wrote 1020 KiB in exponent notation */
        return (i ? b.toFixed(b < 10 ? 2 : b < 100 ? 1 : 0) : String(Math.round(b))) + " " + u[i];
    }
    function signedSize(b) { return (b > 0 ? "+" : b < 0 ? "-" : "") + size(Math.abs(b)); } /* a growth, as ltr analyze --trend */
    function text(tag, s, cls) { var e = document.createElement(tag); e.textContent = s; if (cls) e.className = cls; return e; }
    function frameName(f) { return f.function || (f.module ? f.module.replace(/.*\//, "") + "+" + f.offset : f.address); }

    /* the header: the trace, its window, and what was lost */
    var S = A.summary;
    var replaced = S.images_replaced_by_exec || 0; /* images an exec replaced are no processes of their own */
    document.getElementById("trace").textContent = A.trace + ": " + (S.heap_events || !(A.snapshots || []).length ?
        (S.processes - replaced) + " process(es)" +
        (replaced ? " (" + S.processes + " program images, " + replaced + " of them replaced by an exec)" : "") + ", " + S.heap_events +
        " heap events over " + S.duration_s.toFixed(3) + " s; outstanding at the end " + size(S.outstanding_bytes) +
        " in " + S.outstanding_allocations + " allocations; " +
        (S.peak_s === null ? "no peak (no heap event in the window)" : "peak " + size(S.peak_bytes)) : snapshotsOnly());
    /* A trace of heap snapshots alone: its processes are those of the
     * snapshots ("0 process(es)" said the header, of a trace that held their
     * totals), each with what its last snapshot held. */
    function snapshotsOnly() {
        var last = {};
        A.snapshots.forEach(function (s) { if (s.complete) last[s.pid] = s.bytes; });
        var pids = {};
        A.snapshots.forEach(function (s) { pids[s.pid] = 1; });
        var held = Object.keys(last).reduce(function (t, p) { return t + last[p]; }, 0);
        return Object.keys(pids).length + " process(es), heap snapshots only (no heap events): " + A.snapshots.length +
            " snapshot(s) over " + S.duration_s.toFixed(3) + " s; the last complete one of each process holds " +
            size(held) + " in all";
    }
    check.header = document.getElementById("trace").textContent;
    var warn = document.getElementById("warnings");
    if (S.events_lost || S.events_overwritten)
        warn.appendChild(text("div", "Events lost: " + S.events_lost +
            (S.events_unwritten ? " (" + S.events_unwritten + " of them could not be written to the trace)" : "") +
            ", overwritten: " + S.events_overwritten + ". The figures below miss them.", "warning"));
    var ws = A.warnings || [], into = warn;
    if (ws.length > 2) { /* many: one line open, the rest behind it */
        into = document.createElement("details");
        into.appendChild(text("summary", ws.length + " warnings from the analysis", "warning"));
        warn.appendChild(into);
    }
    ws.forEach(function (w) { into.appendChild(text("div", w, "warning")); });
    check.totals = { outstanding_bytes: S.outstanding_bytes, allocations: S.allocations, frees: S.frees,
                     peak_bytes: S.peak_bytes };

    /* the timeline: each process's outstanding heap bytes (and private bytes, its snapshots' live bytes), markers as lines */
    var ev = C.traceEvents, series = {}, times = {}, markers = [], pname = {};
    ev.forEach(function (e) {
        if (e.ph === "M" && e.name === "process_name") pname[e.pid] = e.args.name;
    });
    ev.forEach(function (e) {
        var who = (pname[e.pid] || "pid") + " " + e.pid;
        if (e.ph === "C" && e.name === "heap outstanding bytes") {
            (series[who + " heap"] = series[who + " heap"] || []).push([e.ts / 1e6, e.args.bytes]);
        } else if (e.ph === "C" && e.name === "memory counters") {
            (series[who + " private"] = series[who + " private"] || []).push([e.ts / 1e6, e.args.private_bytes]);
        } else if (e.ph === "C" && e.name === "heap snapshot live bytes") {
            (series[who + " snapshots"] = series[who + " snapshots"] || []).push([e.ts / 1e6, e.args.bytes]);
        } else if (e.ph === "i") {
            markers.push([e.ts / 1e6, e.name]);
        }
    });
    /* the processes that held the most (a service's shell wrappers would
     * crowd the legend): the 6 highest peaks are drawn, the others counted */
    function whose(k) { return k.replace(/ (heap|private|snapshots)$/, ""); }
    var DRAWN = 6, peakOf = function (k) { return Math.max.apply(null, series[k].map(function (p) { return p[1]; })); };
    var procs = {};
    Object.keys(series).forEach(function (k) {
        var who = whose(k);
        procs[who] = Math.max(procs[who] || 0, peakOf(k));
    });
    var shown = Object.keys(procs).sort(function (a, b) { return procs[b] - procs[a]; }).slice(0, DRAWN);
    var hidden = Object.keys(procs).length - shown.length;
    var keys = Object.keys(series).filter(function (k) { return shown.indexOf(whose(k)) >= 0; });
    keys.forEach(function (k) { series[k].forEach(function (p) { times[p[0]] = 1; }); });
    var xs = Object.keys(times).map(Number).sort(function (a, b) { return a - b; });
    var data = [xs];
    /* How each series is drawn, per what it measures:
     * - "heap" (outstanding heap bytes): a level that changes only at a heap
     *   event and holds until the next one, so a step function: the value of
     *   a point held until the next point (uPlot's stepped paths, align 1).
     *   Across an idle gap it stays flat, then jumps at the next event; a
     *   line between the points would draw a ramp nothing did.
     * - "private" (the memory counters' private bytes) and "snapshots" (the
     *   live bytes of each heap snapshot): a figure read every so often,
     *   which changes between reads at times the trace does not know; a
     *   line between its own readings, interpolated onto the
     *   shared x values so that the points the legend shows are on the line
     *   (marked "~" where they are not a reading). */
    var sampled = function (k) { return / (private|snapshots)$/.test(k); }, read = {};
    keys.forEach(function (k) {
        var pts = series[k], j = 0, last = null;
        if (sampled(k)) {
            read[k] = {};
            pts.forEach(function (p) { read[k][p[0]] = 1; });
            data.push(xs.map(function (x) { /* null before the first reading and after the last */
                while (j < pts.length && pts[j][0] < x) j++;
                if (j >= pts.length) return null;
                if (pts[j][0] === x) { while (j + 1 < pts.length && pts[j + 1][0] === x) j++; return pts[j][1]; }
                if (j === 0) return null;
                var a = pts[j - 1], b = pts[j];
                return a[1] + (b[1] - a[1]) * (x - a[0]) / (b[0] - a[0]);
            }));
            return;
        }
        data.push(xs.map(function (x) { /* stepped onto the shared x values: the last value at or before x */
            while (j < pts.length && pts[j][0] <= x) last = pts[j++][1];
            return last;
        }));
    });
    var colors = ["#c0392b", "#2471a3", "#1e8449", "#7d3c98", "#b9770e", "#566573"];
    /* The bytes axis ticks at binary steps (1, 2, 4 ... 512 B, KiB, MiB, GiB),
     * as its labels are binary units: uPlot's decimal steps put ticks
     * 2 000 000 bytes apart, labelled 1.91 MiB, 3.81 MiB, 5.72 MiB ... (a perl
     * run's chart), figures no one reads a scale from. */
    var binaryIncrs = [];
    [1, 1024, 1048576, 1073741824, 1099511627776].forEach(function (unit) {
        for (var m = 1; m < 1024; m *= 2) binaryIncrs.push(m * unit);
    });
    var chart = null;
    if (xs.length) {
        chart = new uPlot({
            width: Math.max(600, document.body.clientWidth - 40), height: 280,
            scales: { x: { time: false } },
            axes: [{ label: "seconds", values: function (u, v) { return v.map(function (x) { return +x.toPrecision(4); }); } },
                   { values: function (u, v) { check.yticks = v; return v.map(size); }, incrs: binaryIncrs, size: 70 }],
            series: [{ label: "s" }].concat(keys.map(function (k) { /* a process's color; private bytes dashed */
                var c = colors[shown.indexOf(whose(k)) % colors.length];
                return { label: k, stroke: c, width: 1.5, dash: sampled(k) ? [6, 4] : undefined,
                         paths: sampled(k) ? undefined : uPlot.paths.stepped({ align: 1 }),
                         value: function (u, v, si, i) {
                             return v == null ? "-" : (read[k] && i != null && !read[k][xs[i]] ? "~" : "") + size(v);
                         } };
            })),
            /* the legend's values are those of the point whose step the cursor
             * is on (the last x at or before it), not of the nearest point,
             * which past a step's middle would be the next step's value */
            cursor: { drag: { x: true, y: false, setScale: false },
                      dataIdx: function (u, si, closest, x) { return closest > 0 && xs[closest] > x ? closest - 1 : closest; } },
            hooks: {
                draw: [function (u) {
                    var ctx = u.ctx;
                    ctx.save();
                    ctx.strokeStyle = "#888";
                    ctx.setLineDash([4, 3]);
                    markers.forEach(function (m) {
                        var x = u.valToPos(m[0], "x", true);
                        ctx.beginPath(); ctx.moveTo(x, u.bbox.top); ctx.lineTo(x, u.bbox.top + u.bbox.height); ctx.stroke();
                    });
                    ctx.restore();
                    publish(); /* the axis's ticks (check.yticks), known once it is drawn */
                }],
                setSelect: [function (u) {
                    if (u.select.width > 2)
                        rerank(u.posToVal(u.select.left, "x"), u.posToVal(u.select.left + u.select.width, "x"));
                }]
            }
        }, data, document.getElementById("timeline"));
        check.timeline = !!document.querySelector("#timeline canvas");
        check.series = keys;
    }
    if (hidden > 0)
        document.getElementById("timeline").appendChild(text("div", hidden + " process(es) with smaller peaks are not drawn."));
    if (markers.length) {
        var ml = document.createElement("div");
        ml.textContent = "Markers and snapshots: " + markers.map(function (m) { return m[1] + " at " + m[0].toFixed(3) + " s"; }).join("; ");
        document.getElementById("timeline").appendChild(ml);
    }

    /* Each stack's blocks by time cell (A.cells: the grid; s.cells:
     * [alloc cell, free cell or -1, count, bytes]): its outstanding bytes
     * over time, and the four types of any range of cells, exactly. */
    var G = A.cells || { base_s: 0, width_s: 1, count: 1 };
    function cellOf(t) { return Math.max(0, Math.min(G.count - 1, Math.floor((t - G.base_s) / G.width_s))); }
    function overTime(s, cells) { /* cells: how many (G.count unless given); past the grid's, held */
        var v = [], n = cells || G.count;
        for (var t = 0; t < n; t++) v.push(0);
        (s.cells || []).forEach(function (c) {
            for (var t = c[0]; t < n && (c[1] < 0 || t < c[1]); t++) v[t] += c[3];
        });
        return v;
    }
    function typesIn(s, a, b) { /* cells a..b inclusive */
        var r = { AIFI: [0, 0], AIFO: [0, 0], AOFI: [0, 0], AOFO: [0, 0], first: b, last: a };
        (s.cells || []).forEach(function (c) {
            var inside = c[0] >= a && c[0] <= b, before = c[0] < a;
            var freedIn = c[1] >= 0 && c[1] >= a && c[1] <= b, after = c[1] < 0 || c[1] > b;
            var t = inside && freedIn ? "AIFI" : inside && after ? "AIFO" : before && freedIn ? "AOFI" : before && after ? "AOFO" : null;
            if (t) { r[t][0] += c[2]; r[t][1] += c[3]; }
            if (t === "AIFO") { r.first = Math.min(r.first, c[0]); r.last = Math.max(r.last, c[0]); }
        });
        /* as the text report ranks: steady growth above a one-time allocation (docs/analysis.md) */
        r.spread = r.AIFO[0] > 1 && r.last > r.first ? (r.last - r.first) / Math.max(1, b - a) : 0;
        return r;
    }
    /* The cells the window spans: the grid has G.count cells, but a width
     * that doubles leaves the window's end anywhere in its second half, and
     * the cells past it drew each stack flat there: a steady leak looked as if
     * it had levelled off a third of the way before the trace ended. */
    /* And a window that ends past the grid (its cells cover the heap
     * events; the window, the trace's last event of any kind: a program
     * idle after its last allocation, or slow to exit on a loaded machine)
     * has its cells past the grid's too, each stack's bytes held there: the
     * charts ended at the grid's 64th cell, a third short of a 1.07 s window
     * whose heap events fitted 64 cells of 16 ms. */
    var sparkCells = A.window ? Math.max(1, Math.floor((A.window.to_s - G.base_s) / G.width_s) + 1) : G.count;
    function spark(s) { /* the stack's outstanding bytes per cell, held across the cell: steps, as the timeline's */
        var v = overTime(s, Math.max(sparkCells, G.count)).slice(0, sparkCells), max = Math.max.apply(null, v) || 1, cv = document.createElement("canvas");
        cv.width = 128; cv.height = 24; cv.className = "spark";
        var ctx = cv.getContext("2d"), w = cv.width / v.length;
        ctx.strokeStyle = "#c0392b";
        ctx.beginPath();
        v.forEach(function (y, i) { ctx.lineTo(i * w, 23 - 22 * y / max); ctx.lineTo((i + 1) * w, 23 - 22 * y / max); });
        ctx.stroke();
        if (!check.spark) /* the cells drawn and where they end, beside the window's end */
            check.spark = { cells: v.length, end_s: G.base_s + v.length * G.width_s, width_s: G.width_s,
                            to_s: A.window ? A.window.to_s : null };
        return cv;
    }
    var byId = {}; /* every stack the page has, once: the outstanding ones and the big allocators */
    A.stacks.concat(A.most_calls).forEach(function (s) {
        var k = s.pid + ":" + s.stack_id;
        if (!byId[k]) byId[k] = s;
    });

    /* the stacks holding memory, leak candidates (AIFO) first */
    var table = document.getElementById("stacks");
    /* Said as the text report says it (out_text.c's growth_text): a rate per
     * minute only over 10 s or more, since "893 MiB/min" from a half-second
     * run alarms more than it says; and a range's AIFO rows (s.range_s) say
     * how their blocks spread in the range, not "at once" for a steady leak.
     * The window's rows say what the analysis says (s.growth: rank.c's
     * an_stack_growth), a cache turning over too; a range knows only cells. */
    function growth(s) {
        if (s.type !== "AIFO")
            return "";
        var secs = s.range_s !== undefined ? s.range_s : A.window.to_s - A.window.from_s;
        if (s.range_s === undefined && s.growth === "turning over")
            return "turning over (" + s.freed_count + " freed)";
        if (s.range_s === undefined ? s.growth !== "growing" : !((s.spread || 0) >= 0.1) || !(secs > 0))
            return "at once";
        if (secs < 10)
            return "growing over " + secs.toPrecision(2) + " s";
        return size(s.bytes / (secs / 60)) + "/min";
    }
    function showStacks(list, note) {
        table.innerHTML = "";
        var head = document.createElement("tr");
        ["#", "pid", "type", "bytes", "blocks", "growth", "over time", "allocated in"].forEach(function (h) { head.appendChild(text("th", h)); });
        table.appendChild(head);
        list.forEach(function (s, i) {
            var tr = document.createElement("tr");
            tr.appendChild(text("td", String(i + 1), "num"));
            tr.appendChild(text("td", String(s.pid), "num"));
            tr.appendChild(text("td", s.type, s.type));
            tr.appendChild(text("td", size(s.bytes), "num"));
            tr.appendChild(text("td", String(s.count), "num"));
            tr.appendChild(text("td", growth(s), "num"));
            var sp = document.createElement("td");
            sp.appendChild(spark(s));
            tr.appendChild(sp);
            var td = document.createElement("td");
            var fn = text("div", s.frames.length ? frameName(s.frames[0]) : "(no stack)", "fn");
            fn.addEventListener("click", function () { tr.classList.toggle("open"); });
            td.appendChild(fn);
            td.appendChild(text("div", s.frames.map(function (f) {
                return frameName(f) + (f.file ? " (" + f.file + ":" + f.line + ")" : "");
            }).join("\n"), "frames"));
            tr.appendChild(td);
            table.appendChild(tr);
        });
        if (note)
            table.appendChild(text("caption", note));
        check.stacks = list.length;
        check.names = list.map(function (s) { return s.frames.length ? frameName(s.frames[0]) : ""; });
    }
    /* a trace of heap snapshots alone (no heap event) leaves the chart, this
     * table and the flame graph empty: the page says why and where to look */
    showStacks(A.stacks, S.heap_events ? undefined : "No heap events in this trace (heap snapshots alone, or " +
        "no process allocated): " + ((A.snapshots || []).length ? "see the heap snapshots below." : "nothing to show."));

    /* A time range re-ranks the stacks for it, as ltr analyze --from --to
     * would: each stack's AIFO and AOFO blocks of the range (by time cell,
     * exactly; a range is widened to whole cells), AIFO first. */
    function rerank(from, to) {
        var a = cellOf(from), b = cellOf(to), list = [], sums = { AIFI: 0, AIFO: 0, AOFI: 0, AOFO: 0 };
        var lo = G.base_s + a * G.width_s, hi = G.base_s + (b + 1) * G.width_s;
        Object.keys(byId).forEach(function (k) {
            var s = byId[k], t = typesIn(s, a, b);
            Object.keys(sums).forEach(function (n) { sums[n] += t[n][1]; });
            ["AIFO", "AOFO"].forEach(function (n) {
                if (t[n][1] > 0)
                    list.push(Object.assign({}, s, { type: n, bytes: t[n][1], count: t[n][0], spread: t.spread, range_s: hi - lo,
                        weight: n === "AIFO" ? t[n][1] * (0.5 + 0.5 * Math.min(1, t.spread)) : t[n][1] }));
            });
        });
        list.sort(function (x, y) { return x.type !== y.type ? (x.type === "AIFO" ? -1 : 1) : y.weight - x.weight; });
        check.range = [lo, hi, list.length && list[0].frames.length ? frameName(list[0].frames[0]) : null, sums];
        showStacks(list, "Stacks of " + lo.toFixed(3) + " s to " + hi.toFixed(3) + " s: AIFI " + size(sums.AIFI) +
            ", AIFO " + size(sums.AIFO) + ", AOFI " + size(sums.AOFI) + ", AOFO " + size(sums.AOFO) +
            " (of the stacks the page has: the top of each ranking).");
        document.getElementById("range").textContent = "Range " + lo.toFixed(3) + " s to " + hi.toFixed(3) + " s.";
        publish();
    }

    /* the flame graph (an icicle: callers on top) of outstanding bytes, allocated bytes or allocation calls */
    var metrics = {
        "outstanding bytes": function () { return A.stacks.map(function (s) { return [s.frames, s.bytes]; }); },
        "allocated bytes": function () { return A.most_calls.map(function (s) { return [s.frames, s.bytes]; }); },
        "allocation calls": function () { return A.most_calls.map(function (s) { return [s.frames, s.calls]; }); }
    };
    function tree(rows) {
        var root = { name: "all", value: 0, children: [] };
        rows.forEach(function (r) {
            var node = root, frames = r[0].slice().reverse();
            root.value += r[1];
            frames.forEach(function (f) {
                var name = frameName(f), child = null;
                for (var i = 0; i < node.children.length; i++)
                    if (node.children[i].name === name) { child = node.children[i]; break; }
                if (!child) { child = { name: name, value: 0, children: [] }; node.children.push(child); }
                child.value += r[1];
                node = child;
            });
        });
        return root;
    }
    var make = window.flamegraph.flamegraph || window.flamegraph.default || window.flamegraph; /* the UMD build exports an object */
    var flame = make().width(Math.max(600, document.body.clientWidth - 40)).cellHeight(18).inverted(true)
        .selfValue(false).transitionDuration(0).minFrameSize(1);
    var controls = document.getElementById("flame-controls"), pick = document.createElement("select");
    Object.keys(metrics).forEach(function (m) { var o = document.createElement("option"); o.textContent = m; pick.appendChild(o); });
    var search = document.createElement("input");
    search.type = "search";
    search.placeholder = "search a function";
    controls.appendChild(pick);
    controls.appendChild(document.createTextNode(" "));
    controls.appendChild(search);
    /* d3-flame-graph grows each new frame from no width over d3's default
     * 250 ms, whatever transitionDuration says: headless chromium's
     * screenshot of a page under load caught the frames a third of their
     * width, children past their parents' ends. Each is drawn whole at once
     * (its group's width is the final one). */
    function drawFlame() {
        document.getElementById("flame").innerHTML = "";
        d3.select("#flame").datum(tree(metrics[pick.value]())).call(flame);
        document.querySelectorAll("#flame svg g.frame").forEach(function (g) {
            d3.select(g).select("rect").interrupt().attr("width", g.getAttribute("width"));
        });
        check.flame = document.querySelectorAll("#flame svg g").length;
        /* the frames not drawn whole as the page is drawn */
        check.flame_short = Array.prototype.filter.call(document.querySelectorAll("#flame svg g.frame"), function (g) {
            return g.querySelector("rect").getAttribute("width") !== g.getAttribute("width");
        }).length;
    }
    pick.addEventListener("change", drawFlame);
    search.addEventListener("input", function () { if (search.value) flame.search(search.value); else flame.clear(); });
    drawFlame();

    /* heap snapshots, and the stacks' trend across them with its verdict */
    var snaps = A.snapshots || [], trend = A.trend || [], box = document.getElementById("snapshots");
    if (!snaps.length) document.getElementById("snapshots-section").hidden = true;
    function rows(head, list, cells) {
        var t = document.createElement("table");
        var h = document.createElement("tr");
        head.forEach(function (x) { h.appendChild(text("th", x)); });
        t.appendChild(h);
        list.forEach(function (x) {
            var r = document.createElement("tr");
            cells(x).forEach(function (c) { r.appendChild(text("td", c)); });
            t.appendChild(r);
        });
        box.appendChild(t);
    }
    if (snaps.length)
        rows(["snapshot", "pid", "at", "live bytes", "blocks", "stacks", "in blocks an hour old"], snaps, function (s) {
            return [s.name, String(s.pid), s.seconds.toFixed(3) + " s", size(s.bytes), String(s.blocks), String(s.stacks),
                    size(s.bytes_older_1h)];
        });
    if (trend.length) {
        box.appendChild(text("h3", "Trend across the snapshots"));
        /* a plateau's growth, and a leak's after a fill, is its later half's, as ltr analyze --trend says it */
        rows(["verdict", "pid", "growth per hour", "first", "last", "allocated in"], trend, function (t) {
            return [t.verdict, String(t.pid), t.verdict === "plateau" ? (t.still_growing ? "slowed, still growing, " :
                    "levelled off, ") + signedSize(t.later_growth_bytes_per_hour) + " in the later half" :
                    t.after_fill ? signedSize(t.later_growth_bytes_per_hour) + " in the later half, steadily (" +
                    signedSize(t.growth_bytes_per_hour) + " over all)" :
                    signedSize(t.growth_bytes_per_hour),
                    size(t.bytes_first), size(t.bytes_last),
                    t.frames.length ? frameName(t.frames[0]) : "(no stack)"];
        });
    }
    check.snapshots = snaps.length;
    check.trend = trend.map(function (t) { return t.verdict; });

    /* a range given in the URL (#range=FROM,TO seconds): the test's way to select */
    var m = /range=([0-9.]+),([0-9.]+)/.exec(location.hash);
    if (m) rerank(parseFloat(m[1]), parseFloat(m[2]));
    publish();
})();
