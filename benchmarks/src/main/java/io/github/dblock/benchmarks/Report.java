package io.github.dblock.benchmarks;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.function.ToDoubleFunction;

import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.style.Styler;

/**
 * Writes {@code BENCHMARKS.md} and the charts ({@code benchmarks/*.png}, drawn with XChart) into a directory:
 * a comparison with the peers and the raw statements first, what it means for a user, then every figure with how
 * it was measured, the targets with the measured ratio, and for each missed target what limits it. The whole page
 * comes from one run: nothing in it is written by hand.
 */
public final class Report {

	private final Settings settings;

	private final Results results;

	public Report(Settings settings, Results results) {
		this.settings = settings;
		this.results = results;
	}

	/** Writes the report and the charts; returns the Markdown file. */
	public Path write(Path directory) throws IOException {
		Path charts = directory.resolve("benchmarks");
		Files.createDirectories(charts);
		chart(charts.resolve("uncontended.png"), "Uncontended acquire + release, one thread (lower is better)",
				"latency (µs)", List.of(series("p50", this.results.uncontended, Results.Latency::p50),
						series("p99", this.results.uncontended, Results.Latency::p99)),
				labels(this.results.uncontended));
		List<Series> hot = new ArrayList<>();
		List<Series> processes = new ArrayList<>();
		for (Map.Entry<Integer, List<Results.Throughput>> e : this.results.hotInJvm.entrySet()) {
			hot.add(throughputSeries("hold " + e.getKey() + " ms", e.getValue()));
		}
		for (Map.Entry<Integer, List<Results.Throughput>> e : this.results.hotAcrossProcesses.entrySet()) {
			processes.add(throughputSeries("hold " + e.getKey() + " ms", e.getValue()));
		}
		List<String> lockLabels = throughputLabels(this.results.hotInJvm.values().iterator().next());
		chart(charts.resolve("hot-lock-threads.png"), "One hot lock, 8 threads in one JVM (higher is better)",
				"critical sections / s", hot, lockLabels);
		chart(charts.resolve("hot-lock-processes.png"), "One hot lock, " + this.settings.processes() + " JVMs x "
				+ this.settings.threadsPerProcess() + " threads (higher is better)", "critical sections / s", processes,
				lockLabels);
		chart(charts.resolve("spread.png"), "16 threads over 1,000 resources (higher is better)",
				"critical sections / s", List.of(throughputSeries("throughput", this.results.spread)),
				throughputLabels(this.results.spread));
		if (!this.results.floors.isEmpty()) {
			floorsChart(charts.resolve("floors.png"));
		}
		String markdown = markdown();
		Path file = directory.resolve("BENCHMARKS.md");
		Files.writeString(file, markdown);
		return file;
	}

	private record Series(String name, List<@org.jspecify.annotations.Nullable Double> values) {
	}

	/**
	 * Each contender's speed relative to its floor in the three floor scenarios, so that higher is better in all:
	 * the floor's latency over the contender's uncontended, the contender's rate over the floor's under load.
	 */
	private void floorsChart(Path file) throws IOException {
		List<Contender.Kind> kinds = new ArrayList<>();
		for (FloorComparison.Table table : this.results.floors.values()) {
			for (Contender.Kind kind : table.kinds()) {
				if (!kinds.contains(kind) && table.has(kind)) {
					kinds.add(kind);
				}
			}
		}
		List<Series> series = new ArrayList<>();
		for (FloorComparison.Table table : this.results.floors.values()) {
			List<@org.jspecify.annotations.Nullable Double> values = new ArrayList<>();
			for (Contender.Kind kind : kinds) {
				Contender.Kind floor = table.scenario().floor(kind);
				double value = (table.has(kind) && table.has(floor)) ? table.ratio(kind, floor) : Double.NaN;
				if (table.scenario().lowerIsBetter() && value > 0) {
					value = 1 / value;
				}
				values.add(Double.isFinite(value) ? value : null); // not run in this scenario: no bar
			}
			series.add(new Series(table.scenario().title(), values));
		}
		chart(file, "Speed relative to the minimal loop (1 = the floor; higher is better)", "× the floor", series,
				kinds.stream().map(Contender.Kind::label).toList(), "#,##0.00");
	}

	private static Series series(String name, List<Results.Latency> list, ToDoubleFunction<Results.Latency> value) {
		return new Series(name, list.stream().map((l) -> value.applyAsDouble(l)).toList());
	}

	private static Series throughputSeries(String name, List<Results.Throughput> list) {
		return new Series(name, list.stream().map(Results.Throughput::perSecond).toList());
	}

	private static List<String> labels(List<Results.Latency> list) {
		return list.stream().map(Results.Latency::label).toList();
	}

	private static List<String> throughputLabels(List<Results.Throughput> list) {
		return list.stream().map(Results.Throughput::label).toList();
	}

	private static void chart(Path file, String title, String yAxis, List<Series> series, List<String> labels)
			throws IOException {
		chart(file, title, yAxis, series, labels, "#,##0");
	}

	private static void chart(Path file, String title, String yAxis, List<Series> series, List<String> labels,
			String decimals) throws IOException {
		CategoryChart chart = new CategoryChartBuilder().width(1100).height(560).title(title).yAxisTitle(yAxis).build();
		Styler styler = chart.getStyler();
		styler.setLegendPosition(Styler.LegendPosition.InsideNE);
		chart.getStyler().setXAxisLabelRotation(30);
		chart.getStyler().setLabelsVisible(true);
		chart.getStyler().setLabelsFontColorAutomaticEnabled(false);
		chart.getStyler().setDecimalPattern(decimals);
		chart.getStyler().setChartBackgroundColor(java.awt.Color.WHITE);
		chart.getStyler().setChartPadding(24);
		for (Series each : series) {
			chart.addSeries(each.name(), labels, each.values());
		}
		String path = file.toString();
		BitmapEncoder.saveBitmap(chart, path.substring(0, path.length() - ".png".length()),
				BitmapEncoder.BitmapFormat.PNG);
	}

	private static final String NOT_MEASURED = "not measured (no -Dbench.redis-url)";

	private String markdown() {
		StringBuilder md = new StringBuilder();
		md.append("# Benchmarks\n\n");
		md.append("Generated by `benchmarks/` from one run; do not edit by hand. Reproduce with the command below "
				+ "(about 30 minutes; embedded MariaDB unless `-Dbench.jdbc-url=jdbc:mysql://host:3306/db "
				+ "-Dbench.username=… -Dbench.password=…`; without `-Dbench.redis-url` Redisson is not measured, "
				+ "everything else is). `./mvnw verify` runs every scenario for a fraction of a second and needs no "
				+ "Redis.\n\n");
		md.append("```shell\n./mvnw -pl benchmarks -am verify -Pbenchmarks -Dbench.redis-url=redis://127.0.0.1:6379\n"
				+ "```\n\n");
		setup(md);
		atAGlance(md);
		whatThisMeans(md);
		targets(md);
		floors(md);
		md.append("## How this run was measured\n\n| | |\n|---|---|\n");
		for (Map.Entry<String, String> e : this.results.environment.entrySet()) {
			md.append("| ").append(e.getKey()).append(" | ").append(e.getValue()).append(" |\n");
		}
		md.append("| JMH (scenarios 1, 5, 6) | ").append(this.settings.jmhWarmupIterations()).append(" warm-up + ")
			.append(this.settings.jmhMeasurementIterations()).append(" measured iterations of ")
			.append(this.settings.jmhIteration().toMillis())
			.append(" ms, sample-time mode, 1 thread, forks 0 |\n");
		md.append("| contended runs (scenarios 2–4, 9) | ").append(this.settings.warmup().toMillis())
			.append(" ms warm-up, then ").append(this.settings.measure().toMillis())
			.append(" ms measured (scenarios 2 and 3: ").append(this.settings.hotRounds()).append(" rotated round(s) of ")
			.append(this.settings.hotMeasure().toMillis())
			.append(" ms); wait = start of an attempt to start of its critical section |\n");
		md.append("| the peers | ShedLock `JdbcTemplateLockProvider` ").append(shedLockVersion())
			.append(" with `usingDbTime()`, lockAtMostFor 30 s; it never waits, so the harness makes it ")
			.append(Contenders.SHEDLOCK_RETRY)
			.append(". Spring Integration ")
			.append(org.springframework.integration.jdbc.lock.JdbcLockRegistry.class.getPackage().getImplementationVersion())
			.append(" `JdbcLockRegistry`, `DefaultLockRepository` defaults (TTL 10 s, 100 ms between tries across JVMs). ")
			.append(redissonDescription()).append(" |\n");
		md.append("| our modes | `LockTemplate` with the auto-configuration's defaults (lease 30 s, back-off 10 ms "
				+ "doubling to 200 ms); `pessimistic.max-connections` 64, `optimistic.max-attempts` 1,000; LEASE "
				+ "and PESSIMISTIC through `acquire`/`close`, OPTIMISTIC through `execute` |\n\n");
		scenario1(md);
		scenario2and3(md);
		scenario4(md);
		scenario5(md);
		scenario6(md);
		scenario7(md);
		scenario8(md);
		scenario9(md);
		scenario12(md);
		return md.toString();
	}

	private static String redissonDescription() {
		String url = Contenders.redisUrl();
		if (url == null) {
			return "Redisson: " + NOT_MEASURED;
		}
		return "Redisson " + org.redisson.Redisson.class.getPackage().getImplementationVersion() + " `RLock` "
				+ "(`tryLock(1 min, lease 30 s)`, `unlock()`), a single-server client of " + Contenders.REDIS_POOL
				+ " connections to Redis " + redisVersion() + " at " + url;
	}

	private static String redisVersion() {
		String url = Contenders.redisUrl();
		if (url == null) {
			return "–";
		}
		try {
			java.net.URI uri = java.net.URI.create(url);
			try (java.net.Socket socket = new java.net.Socket(uri.getHost(), (uri.getPort() > 0) ? uri.getPort() : 6379)) {
				socket.setSoTimeout(2000);
				socket.getOutputStream().write("INFO server\r\nQUIT\r\n".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
				String reply = new String(socket.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.US_ASCII);
				java.util.regex.Matcher m = java.util.regex.Pattern.compile("redis_version:(\\S+)").matcher(reply);
				return m.find() ? m.group(1) : "(version unknown)";
			}
		}
		catch (IOException | RuntimeException ex) {
			return "(version unknown)";
		}
	}

	/** The short setup summary under the title: server, durability, machine, JVM, pools, date. */
	private void setup(StringBuilder md) {
		Map<String, String> env = this.results.environment;
		md.append("**Setup.** ").append(env.getOrDefault("server", "?")).append("; `innodb_flush_log_at_trx_commit` = ")
			.append(env.getOrDefault("innodb_flush_log_at_trx_commit", "?")).append(", log_bin / sync_binlog = ")
			.append(env.getOrDefault("log_bin / sync_binlog", "?")).append(".  \n");
		md.append("**Machine.** ").append(env.getOrDefault("machine", "?")).append("; ")
			.append(env.getOrDefault("JVM", "?")).append("; ").append(this.settings.name()).append(" settings.  \n");
		md.append("**Pools.** Every contender on a HikariCP pool of its own, ").append(FloorComparison.POOL)
			.append(" connections, Connector/J with `cachePrepStmts`, `useLocalSessionState`, `tcpNoDelay`; ")
			.append((Contenders.redisUrl() != null) ? "Redisson on a client of " + Contenders.REDIS_POOL
					+ " connections to Redis " + redisVersion() + "." : "Redisson " + NOT_MEASURED + ".")
			.append("  \n");
		md.append("**Date.** ").append(env.getOrDefault("date", "?")).append("\n\n");
	}

	private FloorComparison.@org.jspecify.annotations.Nullable Table floor(FloorComparison.Scenario scenario) {
		return this.results.floors.get(scenario);
	}

	/** The columns of "At a glance": this library's modes, the peers, then the raw statements. */
	private static final Contender.Kind[] GLANCE = { Contender.Kind.LEASE, Contender.Kind.PESSIMISTIC_SERVER_CLOCK,
			Contender.Kind.SHEDLOCK, Contender.Kind.JDBC_LOCK_REGISTRY, Contender.Kind.REDISSON };

	/** The first-screen comparison: one row per question, each cell the figure and its ratio to the row's floor. */
	private void atAGlance(StringBuilder md) {
		md.append("## At a glance\n\n");
		md.append("Each cell: the figure (median of the rounds), then in parentheses its ratio to the row's floor, the "
				+ "raw statements a user would write by hand: the lease upsert for the leases and peers, the minimal "
				+ "`FOR UPDATE` loop for PESSIMISTIC, `GET_LOCK` on one hot resource. Below 1 × is faster for "
				+ "latency, above 1 × does more for sections/s.\n\n");
		md.append("| | this library, LEASE | PESSIMISTIC, server-clock | ShedLock | Spring Integration `JdbcLockRegistry` "
				+ "| Redisson | raw statements |\n|---|---:|---:|---:|---:|---:|---:|\n");
		glanceRow(md, "uncontended acquire + release, p50 µs", floor(FloorComparison.Scenario.UNCONTENDED), "%,.0f");
		glanceRow(md, "16 threads over 1,000 resources, sections/s", floor(FloorComparison.Scenario.SPREAD), "%,.0f");
		glanceRow(md, "one hot resource, 8 threads in one JVM, hold 0, sections/s", floor(FloorComparison.Scenario.HOT),
				"%,.0f");
		List<Results.Throughput> across = this.results.hotAcrossProcesses.get(0);
		md.append("| one hot resource, ").append(this.settings.processes()).append(" JVMs × ")
			.append(this.settings.threadsPerProcess()).append(" threads, hold 0, sections/s; wait p99 ms |");
		if (across == null) {
			md.append(" – | – | – | – | – | – |\n\n");
			return;
		}
		Results.Throughput getLock = Results.optional(across, Contender.Kind.GET_LOCK);
		Results.Throughput forUpdate = Results.optional(across, Contender.Kind.MINIMAL_FOR_UPDATE);
		for (Contender.Kind kind : GLANCE) {
			Results.Throughput t = Results.optional(across, kind);
			Results.Throughput base = (kind == Contender.Kind.PESSIMISTIC_SERVER_CLOCK) ? forUpdate : getLock;
			if (t == null) {
				md.append(' ').append(kind.isMeasured() ? "–" : NOT_MEASURED).append(" |");
				continue;
			}
			md.append(String.format(Locale.ROOT, " %,.0f%s; p99 %s |", t.perSecond(),
					(base != null && base.perSecond() > 0) ? " (" + ratio(t.perSecond() / base.perSecond()) + ")" : "",
					ms(t.waitP99Millis())));
		}
		md.append(' ');
		if (getLock != null) {
			md.append(String.format(Locale.ROOT, "`GET_LOCK` %,.0f; p99 %s", getLock.perSecond(), ms(getLock.waitP99Millis())));
		}
		if (forUpdate != null) {
			md.append(String.format(Locale.ROOT, "; `FOR UPDATE` %,.0f; p99 %s", forUpdate.perSecond(),
					ms(forUpdate.waitP99Millis())));
		}
		md.append(" |\n\n");
		md.append("Rows 1–3: each contender on a pool of its own, ").append(FloorComparison.Params.of(this.settings).rounds())
			.append(" rotated round(s) (\"Against the minimal loops\" below, with CPU and allocation per operation). "
					+ "Row 4: worker JVMs of scenario 3, each contender on a pool of threads + 2 per JVM, the median "
					+ "of ").append(this.settings.hotRounds()).append(" rotated round(s); CPU is not measured there.\n\n");
	}

	private static String ms(double millis) {
		return Double.isNaN(millis) ? "–" : String.format(Locale.ROOT, "%.1f", millis);
	}

	private static void glanceRow(StringBuilder md, String question, FloorComparison.@org.jspecify.annotations.Nullable Table table,
			String format) {
		md.append("| ").append(question).append(" |");
		for (Contender.Kind kind : GLANCE) {
			if (!kind.isMeasured()) {
				md.append(' ').append(NOT_MEASURED).append(" |");
				continue;
			}
			if (table == null || !table.has(kind)) {
				md.append(" – |");
				continue;
			}
			Contender.Kind floor = table.scenario().floor(kind);
			md.append(' ').append(String.format(Locale.ROOT, format, table.median(kind)));
			if (table.has(floor)) {
				md.append(" (").append(ratio(table.ratio(kind, floor))).append(')');
			}
			md.append(" |");
		}
		md.append(' ');
		if (table != null) {
			List<String> raw = new ArrayList<>();
			for (Contender.Kind floor : new Contender.Kind[] { Contender.Kind.RAW_LEASE_UPSERT,
					Contender.Kind.MINIMAL_FOR_UPDATE, Contender.Kind.GET_LOCK }) {
				if (table.has(floor) && (floor != Contender.Kind.GET_LOCK || table.scenario() == FloorComparison.Scenario.HOT)) {
					raw.add(rawName(floor) + " " + String.format(Locale.ROOT, format, table.median(floor)));
				}
			}
			md.append(raw.isEmpty() ? "–" : String.join("; ", raw));
		}
		else {
			md.append('–');
		}
		md.append(" |\n");
	}

	private static String rawName(Contender.Kind floor) {
		return switch (floor) {
			case RAW_LEASE_UPSERT -> "upsert";
			case MINIMAL_FOR_UPDATE -> "`FOR UPDATE`";
			case GET_LOCK -> "`GET_LOCK`";
			default -> floor.label();
		};
	}

	/** Four to six sentences with this run's numbers, for a user choosing a lock. */
	private void whatThisMeans(StringBuilder md) {
		md.append("## What this means for you\n\n");
		FloorComparison.Table u = floor(FloorComparison.Scenario.UNCONTENDED);
		FloorComparison.Table s = floor(FloorComparison.Scenario.SPREAD);
		FloorComparison.Table h = floor(FloorComparison.Scenario.HOT);
		List<String> sentences = new ArrayList<>();
		if (u != null && u.has(Contender.Kind.LEASE) && u.has(Contender.Kind.RAW_LEASE_UPSERT)) {
			sentences.add(String.format(Locale.ROOT, "An uncontended lock costs about %s the two statements it sends: "
					+ "%,.0f µs against %,.0f µs for the hand-written upsert and delete, with %,.0f µs of JVM CPU against "
					+ "their %,.0f µs%s.", ratio(u.ratio(Contender.Kind.LEASE, Contender.Kind.RAW_LEASE_UPSERT)),
					u.median(Contender.Kind.LEASE), u.median(Contender.Kind.RAW_LEASE_UPSERT),
					u.median(Contender.Kind.LEASE, FloorComparison.Figure::cpuMicros),
					u.median(Contender.Kind.RAW_LEASE_UPSERT, FloorComparison.Figure::cpuMicros),
					peers(u, " ShedLock took %s and `JdbcLockRegistry` %s of LEASE's time")));
		}
		if (s != null && s.has(Contender.Kind.LEASE) && s.has(Contender.Kind.RAW_LEASE_UPSERT)) {
			sentences.add(String.format(Locale.ROOT, "Under parallel load (16 threads over 1,000 resources) LEASE made "
					+ "%,.0f sections/s, %s the raw upsert loop; size the pool for the threads that lock at once.",
					s.median(Contender.Kind.LEASE), ratio(s.ratio(Contender.Kind.LEASE, Contender.Kind.RAW_LEASE_UPSERT))));
		}
		if (h != null && h.has(Contender.Kind.LEASE) && h.has(Contender.Kind.GET_LOCK)) {
			sentences.add(String.format(Locale.ROOT, "Hot locks in one JVM are handed over in memory: %,.0f sections/s "
					+ "on one resource with 8 threads, %s `GET_LOCK`.", h.median(Contender.Kind.LEASE),
					ratio(h.ratio(Contender.Kind.LEASE, Contender.Kind.GET_LOCK))));
		}
		List<Results.Throughput> across = this.results.hotAcrossProcesses.get(0);
		if (across != null) {
			Results.Throughput lease = Results.optional(across, Contender.Kind.LEASE);
			Results.Throughput getLock = Results.optional(across, Contender.Kind.GET_LOCK);
			if (lease != null && getLock != null && getLock.perSecond() > 0) {
				sentences.add(String.format(Locale.ROOT, "Across %d JVMs every change of node goes through the database "
						+ "(two commits): %,.0f sections/s, %s `GET_LOCK`, and a waiter waited %.1f ms at the 99th "
						+ "percentile.", this.settings.processes(), lease.perSecond(),
						ratio(lease.perSecond() / getLock.perSecond()), lease.waitP99Millis()));
			}
		}
		if (u != null && u.has(Contender.Kind.PESSIMISTIC_SERVER_CLOCK) && u.has(Contender.Kind.MINIMAL_FOR_UPDATE)) {
			sentences.add(String.format(Locale.ROOT, "PESSIMISTIC with `fencing = server-clock` sends the minimal "
					+ "row-lock statements (%,.0f µs, %s the `FOR UPDATE` loop) but holds a connection and a transaction "
					+ "while the lock is held.", u.median(Contender.Kind.PESSIMISTIC_SERVER_CLOCK),
					ratio(u.ratio(Contender.Kind.PESSIMISTIC_SERVER_CLOCK, Contender.Kind.MINIMAL_FOR_UPDATE))));
		}
		if (u != null && u.has(Contender.Kind.REDISSON) && u.has(Contender.Kind.LEASE)) {
			String spread = (s != null && s.has(Contender.Kind.REDISSON) && s.has(Contender.Kind.LEASE))
					? String.format(Locale.ROOT, " and %s LEASE's sections/s over 1,000 resources",
							ratio(s.median(Contender.Kind.REDISSON) / s.median(Contender.Kind.LEASE)))
					: "";
			double r = u.median(Contender.Kind.REDISSON) / u.median(Contender.Kind.LEASE);
			sentences.add(String.format(Locale.ROOT, "If you already run Redis, Redisson is %s per call (%,.0f µs "
					+ "uncontended, %s LEASE's latency%s); it adds a second system to run, and its locks take no part "
					+ "in the database's transactions.", (r < 0.9) ? "faster" : (r > 1.1) ? "slower" : "about as fast",
					u.median(Contender.Kind.REDISSON), ratio(r), spread));
		}
		else {
			sentences.add("Redisson was not measured in this run (no `-Dbench.redis-url`).");
		}
		for (String sentence : sentences) {
			md.append("- ").append(sentence).append('\n');
		}
		md.append('\n');
	}

	private static String peers(FloorComparison.Table u, String format) {
		if (!u.has(Contender.Kind.SHEDLOCK) || !u.has(Contender.Kind.JDBC_LOCK_REGISTRY)) {
			return "";
		}
		double lease = u.median(Contender.Kind.LEASE);
		return ";" + String.format(Locale.ROOT, format, ratio(u.median(Contender.Kind.SHEDLOCK) / lease),
				ratio(u.median(Contender.Kind.JDBC_LOCK_REGISTRY) / lease));
	}

	/** One target of the issue: text, per-round values (median, min, max) and whether the median meets it. */
	private record Target(String text, String measured, String range, boolean met, String why) {
	}

	private List<Target> targetList() {
		List<Target> list = new ArrayList<>();
		FloorComparison.Table u = floor(FloorComparison.Scenario.UNCONTENDED);
		FloorComparison.Table s = floor(FloorComparison.Scenario.SPREAD);
		FloorComparison.Table h = floor(FloorComparison.Scenario.HOT);
		String design = " ([DESIGN.md, Benchmarks](DESIGN.md#benchmarks))";
		String serverTime = " ([DESIGN.md, where the time goes](DESIGN.md#why-the-targets-against-the-raw-statements-are-hard-to-meet))";
		if (u != null) {
			list.add(ratioTarget("LEASE uncontended p50 ≤ 1.15 × raw lease upsert", u, Contender.Kind.LEASE,
					Contender.Kind.RAW_LEASE_UPSERT, 1.15, true, "the same round trips and commits, but the server "
							+ "spends longer on LEASE's two statements: the expires_at index, their length, wider rows"
							+ serverTime));
			list.add(ratioTarget("PESSIMISTIC server-clock uncontended p50 ≤ 1.3 × minimal FOR UPDATE", u,
					Contender.Kind.PESSIMISTIC_SERVER_CLOCK, Contender.Kind.MINIMAL_FOR_UPDATE, 1.3, true,
					"the JVM's work around the same three statements (owner, local lock, connection limit)" + design));
		}
		if (s != null) {
			list.add(ratioTarget("LEASE ≥ 0.9 × raw lease upsert, 16 threads over 1,000 resources", s,
					Contender.Kind.LEASE, Contender.Kind.RAW_LEASE_UPSERT, 0.9, false,
					"two cores are the limit, and LEASE costs the server and the JVM more CPU per cycle" + serverTime));
		}
		if (h != null) {
			list.add(ratioTarget("LEASE ≥ 3 × GET_LOCK, one hot resource in one JVM, hold 0", h, Contender.Kind.LEASE,
					Contender.Kind.GET_LOCK, 3, false, "the in-memory hand-over is bounded by the lease's return to the "
							+ "database every 200 ms or 1,024 holders" + design));
		}
		Map<Contender.Kind, List<Results.Throughput>> rounds = this.results.hotAcrossProcessesRounds.get(0);
		if (rounds != null) {
			list.add(processTarget("PESSIMISTIC server-clock ≥ 0.9 × minimal FOR UPDATE, " + this.settings.processes()
					+ " JVMs, hold 0", rounds, Contender.Kind.PESSIMISTIC_SERVER_CLOCK, Contender.Kind.MINIMAL_FOR_UPDATE,
					0.9, "one waiter per JVM waits in the server, so each change of holder inside a JVM adds a wake-up "
							+ "and a round trip" + design));
			list.add(processTarget("LEASE ≥ 1.3 × GET_LOCK, " + this.settings.processes() + " JVMs, hold 0", rounds,
					Contender.Kind.LEASE, Contender.Kind.GET_LOCK, 1.3, "every change of node costs the release's and the "
							+ "take's commits and up to one poll step" + design));
			List<Results.Throughput> lease = rounds.get(Contender.Kind.LEASE);
			if (lease != null) {
				double[] p99 = lease.stream().mapToDouble(Results.Throughput::waitP99Millis).toArray();
				double median = FloorComparison.median(p99);
				list.add(new Target("LEASE wait p99 < 20 ms, " + this.settings.processes() + " JVMs, hold 0",
						String.format(Locale.ROOT, "%.1f ms", median), range(p99, "%.1f"), median < 20,
						"the other JVM's threads queue while each change of node's two commits and poll step leave the "
								+ "lock idle"
								+ design));
			}
		}
		return list;
	}

	private static Target ratioTarget(String text, FloorComparison.Table table, Contender.Kind kind,
			Contender.Kind floor, double limit, boolean atMost, String why) {
		if (!table.has(kind) || !table.has(floor)) {
			return new Target(text, "–", "–", false, "not measured");
		}
		double[] r = table.roundRatios(kind, floor);
		return new Target(text, ratio(r[0]), String.format(Locale.ROOT, "%.2f–%.2f", r[1], r[2]),
				atMost ? r[0] <= limit : r[0] >= limit, why);
	}

	private static Target processTarget(String text, Map<Contender.Kind, List<Results.Throughput>> rounds,
			Contender.Kind kind, Contender.Kind floor, double limit, String why) {
		List<Results.Throughput> a = rounds.get(kind);
		List<Results.Throughput> b = rounds.get(floor);
		if (a == null || b == null) {
			return new Target(text, "–", "–", false, "not measured");
		}
		double[] ratios = new double[Math.min(a.size(), b.size())];
		for (int i = 0; i < ratios.length; i++) {
			ratios[i] = a.get(i).perSecond() / b.get(i).perSecond();
		}
		double median = FloorComparison.median(ratios);
		return new Target(text, ratio(median), range(ratios, "%.2f"), median >= limit, why);
	}

	private static String range(double[] values, String format) {
		return String.format(Locale.ROOT, format, java.util.Arrays.stream(values).min().orElse(Double.NaN)) + "–"
				+ String.format(Locale.ROOT, format, java.util.Arrays.stream(values).max().orElse(Double.NaN));
	}

	/** The issue's targets, each the median of the run's rotated rounds, and a bullet for each one missed. */
	private void targets(StringBuilder md) {
		List<Target> list = targetList();
		md.append("## Targets\n\nEach measured figure is the median of the rounds' ratios (rounds paired: both "
				+ "contenders ran in each), with the lowest and highest round.\n\n"
				+ "| target | measured (median) | rounds, min–max | met |\n|---|---:|---:|---|\n");
		for (Target t : list) {
			md.append("| ").append(t.text()).append(" | ").append(t.measured()).append(" | ").append(t.range())
				.append(" | ").append(t.met() ? "yes" : "**no**").append(" |\n");
		}
		md.append('\n');
		List<Target> missed = list.stream().filter((t) -> !t.met()).limit(5).toList();
		md.append("### Where targets are missed\n\n");
		if (missed.isEmpty()) {
			md.append("Every target was met in this run.\n\n");
			return;
		}
		for (Target t : missed) {
			md.append("- **").append(t.text()).append("** (").append(t.measured()).append("): ").append(t.why())
				.append(".\n");
		}
		md.append('\n');
	}

	/** The floors section: the three scenarios against the minimal loops, with CPU and allocation per operation. */
	private void floors(StringBuilder md) {
		md.append("## Against the minimal loops\n\nEach contender on a HikariCP pool of its own (").append(FloorComparison.POOL)
			.append(" connections, the driver settings above), nothing but its statements in the baselines. ")
			.append(FloorComparison.Params.of(this.settings).rounds())
			.append(" rotated round(s) per scenario; each figure is the median, with the lowest and highest round. CPU "
					+ "and allocation are the JVM's per operation, summed over the measuring threads (`ThreadMXBean` "
					+ "thread CPU time and allocated bytes; for Redisson also its Netty threads, spread over the run's "
					+ "cycles). The baselines are checked against each other: two writes against the upsert, the bare "
					+ "row lock against `FOR UPDATE`.\n\n");
		if (!this.results.floors.isEmpty()) {
			md.append("![against the minimal loops](benchmarks/floors.png)\n\n");
		}
		for (FloorComparison.Table table : this.results.floors.values()) {
			FloorComparison.Scenario scenario = table.scenario();
			boolean latency = scenario.lowerIsBetter();
			md.append("### ").append(scenario.title()).append("\n\n| contender | ").append(scenario.unit())
				.append(" | min–max | ").append(latency ? "p99 µs" : "wait p99 ms")
				.append(" | floor | ratio to floor | CPU µs/op | allocated B/op |\n|---|---:|---:|---:|---|---:|---:|---:|\n");
			for (Contender.Kind kind : table.kinds()) {
				if (!table.has(kind)) {
					continue;
				}
				Contender.Kind floor = scenario.floor(kind);
				double[] range = table.range(kind);
				md.append(String.format(Locale.ROOT, "| %s | %,.0f | %,.0f–%,.0f | %s | %s | %s | %s | %s |%n",
						kind.label(), table.median(kind), range[0], range[1],
						cost(table.median(kind, FloorComparison.Figure::p99), latency ? "%,.0f" : "%.1f"), rawName(floor),
						table.has(floor) ? ratio(table.ratio(kind, floor)) : "–",
						cost(table.median(kind, FloorComparison.Figure::cpuMicros), "%.1f"),
						cost(table.median(kind, FloorComparison.Figure::allocatedBytes), "%,.0f")));
			}
			md.append('\n');
		}
		md.append("Across JVMs (one hot resource, ").append(this.settings.processes()).append(" JVMs × ")
			.append(this.settings.threadsPerProcess()).append(" threads) the figures against `GET_LOCK` and the minimal "
					+ "`FOR UPDATE` loop come from scenario 3 below (each contender on a pool of threads + 2 in each "
					+ "worker JVM; CPU and allocation are not measured in the workers).\n\n");
	}

	/**
	 * Scenario 12's section, for a run of that scenario alone ({@link CommitValidationScenario#main}), which puts it
	 * into an existing report.
	 * @return the section's Markdown, and an empty second element (the scenario has no target)
	 */
	String[] commitValidationOnly() {
		StringBuilder md = new StringBuilder();
		scenario12(md);
		return new String[] { md.toString(), "" };
	}

	private void scenario1(StringBuilder md) {
		Results.Latency select1 = this.results.uncontended(Contender.Kind.SELECT_1);
		Results.Latency upsert = this.results.uncontended(Contender.Kind.RAW_LEASE_UPSERT);
		Results.Latency forUpdate = this.results.uncontended(Contender.Kind.MINIMAL_FOR_UPDATE);
		md.append("## 1. Uncontended acquire + release, every contender\n\nJMH, one thread, a random one of 1,000 "
				+ "resources (each used once before), " + this.settings.rounds() + " rotated round(s), medians; "
				+ "\"execute\" rows run through `LockTemplate.execute`, as `@DistributedLock` does"
				+ ((Contenders.redisUrl() != null) ? "; Redisson's CPU and allocation here are the calling thread's "
						+ "only (its I/O runs on Netty threads, counted in \"Against the minimal loops\")" : "")
				+ ".\n\n");
		md.append("![uncontended](benchmarks/uncontended.png)\n\n");
		md.append("| contender | p50 µs | p99 µs | mean µs | CPU µs/op | allocated B/op | samples | p50 / SELECT 1 | "
				+ "p50 / raw lease upsert | p50 / minimal FOR UPDATE |\n|---|---|---|---|---|---|---|---|---|---|\n");
		for (Results.Latency l : this.results.uncontended) {
			md.append(String.format(Locale.ROOT, "| %s | %.0f | %.0f | %.0f | %.1f | %.0f | %d | %.2f | %.2f | %.2f |%n",
					l.label(), l.p50(), l.p99(), l.mean(), l.cpuMicrosPerOp(), l.allocatedBytesPerOp(), l.samples(),
					l.p50() / select1.p50(), l.p50() / upsert.p50(), l.p50() / forUpdate.p50()));
		}
		md.append('\n');
	}

	private void scenario2and3(StringBuilder md) {
		md.append("## 2. One hot resource, 8 threads in one JVM\n\n" + this.settings.hotRounds()
				+ " rotated round(s) at hold 0 and 1 ms; each row is the contender's median round.\n\n"
				+ "![hot lock, threads](benchmarks/hot-lock-threads.png)\n\n");
		throughputTables(md, this.results.hotInJvm);
		md.append("## 3. One hot resource across " + this.settings.processes() + " JVM processes\n\n"
				+ this.settings.threadsPerProcess() + " threads per process, " + this.settings.hotRounds()
				+ " rotated round(s), median round; the per-process split shows fairness across nodes.\n\n"
				+ "![hot lock, processes](benchmarks/hot-lock-processes.png)\n\n");
		throughputTables(md, this.results.hotAcrossProcesses);
	}

	private static void throughputTables(StringBuilder md, Map<Integer, List<Results.Throughput>> byHold) {
		boolean processes = byHold.values().stream().flatMap(List::stream).anyMatch((t) -> t.completedPerProcess().size() > 1);
		md.append("| contender | hold | sections / s | wait p50 ms | wait p99 ms | CPU µs/op | allocated B/op | completed |"
				+ (processes ? " completed per process |\n|---|---|---|---|---|---|---|---|---|\n"
						: "\n|---|---|---|---|---|---|---|---|\n"));
		for (Map.Entry<Integer, List<Results.Throughput>> e : byHold.entrySet()) {
			for (Results.Throughput t : e.getValue()) {
				md.append(String.format(Locale.ROOT, "| %s | %d ms | %.0f | %.2f | %.2f | %s | %s | %d |", t.label(),
						e.getKey(), t.perSecond(), t.waitP50Millis(), t.waitP99Millis(), cost(t.cpuMicrosPerOp(), "%.1f"),
						cost(t.allocatedBytesPerOp(), "%.0f"), t.completed()));
				if (processes) {
					md.append(' ').append(t.completedPerProcess().stream().map(String::valueOf)
						.collect(java.util.stream.Collectors.joining(" / "))).append(" |");
				}
				md.append('\n');
			}
		}
		md.append('\n');
	}

	/** A cost per operation, or "–" where it was not measured (other processes). */
	private static String cost(double value, String format) {
		return Double.isNaN(value) ? "–" : String.format(Locale.ROOT, format, value);
	}

	private void scenario4(StringBuilder md) {
		md.append("## 4. 16 threads over 1,000 resources, every lock\n\nNo hold, a random resource per cycle.\n\n"
				+ "![spread](benchmarks/spread.png)\n\n");
		throughputTables(md, Map.of(0, this.results.spread));
	}

	private void scenario5(StringBuilder md) {
		double r = this.results.tableSize.get(1).p50() / this.results.tableSize.get(0).p50();
		md.append(String.format(Locale.ROOT, "## 5. Lock table size\n\nLEASE, one thread, a random existing row: the "
				+ "large table's p50 is %s the small one's (every statement is a primary-key lookup).%n%n", ratio(r)));
		md.append("| table | p50 µs | p99 µs | mean µs | CPU µs/op | allocated B/op | samples |\n"
				+ "|---|---|---|---|---|---|---|\n");
		for (Results.Latency l : this.results.tableSize) {
			md.append(String.format(Locale.ROOT, "| %s | %.0f | %.0f | %.0f | %s | %s | %d |%n", l.label(), l.p50(),
					l.p99(), l.mean(), cost(l.cpuMicrosPerOp(), "%.1f"), cost(l.allocatedBytesPerOp(), "%.0f"),
					l.samples()));
		}
		md.append('\n');
	}

	private void scenario6(StringBuilder md) {
		double overhead = this.results.annotation.get(3).p50() - this.results.annotation.get(2).p50();
		md.append(String.format(Locale.ROOT, "## 6. `@DistributedLock` over `LockTemplate`%n%nThe annotation's own "
				+ "cost (reentrant pair, no SQL): %.2f µs per call at the median.%n%n", overhead));
		md.append("| call | p50 µs | p99 µs | mean µs | CPU µs/op | allocated B/op | samples |\n"
				+ "|---|---|---|---|---|---|---|\n");
		for (Results.Latency l : this.results.annotation) {
			md.append(String.format(Locale.ROOT, "| %s | %.2f | %.2f | %.2f | %s | %s | %d |%n", l.label(), l.p50(),
					l.p99(), l.mean(), cost(l.cpuMicrosPerOp(), "%.2f"), cost(l.allocatedBytesPerOp(), "%.0f"),
					l.samples()));
		}
		md.append('\n');
	}

	private void scenario7(StringBuilder md) {
		md.append("## 7. Memory\n\nUsed heap after a full GC, before and after locking distinct resources (16 threads, "
				+ "up to " + String.format(Locale.ROOT, "%,d", this.settings.heapResources()) + " or "
				+ this.settings.heapBudget().toSeconds() + " s); ±16 B per resource is GC noise.\n\n"
				+ "| mode | resources touched | heap before | heap after | retained bytes / resource | "
				+ "resources with JVM-local state |\n|---|---|---|---|---|---|\n");
		for (Results.Heap h : this.results.heap) {
			md.append(String.format(Locale.ROOT, "| %s | %,d | %.1f MB | %.1f MB | %.2f | %d |%n", h.label(),
					h.resources(), h.beforeBytes() / 1048576.0, h.afterBytes() / 1048576.0, h.bytesPerResource(),
					h.localResources()));
		}
		md.append('\n');
	}

	private void scenario8(StringBuilder md) {
		md.append("## 8. Recovery after SIGKILL\n\nThe holder process is killed while a waiter waits (LEASE with a "
				+ this.settings.crashLease().toMillis() + " ms lease); times to the waiter's acquisition.\n\n"
				+ "| mode | from kill, ms | from the holder's acquisition, ms |\n|---|---|---|\n");
		for (Map.Entry<String, List<ProcessScenarios.Recovery>> e : this.results.recovery.entrySet()) {
			for (ProcessScenarios.Recovery r : e.getValue()) {
				md.append("| ").append(e.getKey()).append(" | ").append(r.afterKillMillis()).append(" | ")
					.append(r.afterHolderAcquiredMillis()).append(" |\n");
			}
		}
		md.append('\n');
	}

	private void scenario9(StringBuilder md) {
		md.append("## 9. Read/write locks\n\nOne hot resource, " + ReadWriteScenario.THREADS + " threads, "
				+ ReadWriteScenario.HOLD.toMillis() + " ms inside; READ with the given share, else WRITE; the last row "
				+ "is the EXCLUSIVE LEASE lock.\n\n");
		throughputTables(md, Map.of((int) ReadWriteScenario.HOLD.toMillis(), this.results.readWrite));
		boolean within = this.results.semaphore.stream().allMatch((run) -> run.mostInside() <= run.permits());
		md.append("## 10. Semaphore\n\nOne pool of N permits, 8 threads, 1 ms inside; never more than N inside at "
				+ "once: " + (within ? "yes" : "**no**") + ".\n\n"
				+ "| N | sections/s | wait p50, ms | wait p99, ms | CPU µs/op | allocated B/op | most inside |\n"
				+ "|---|---|---|---|---|---|---|\n");
		for (Results.SemaphoreRun run : this.results.semaphore) {
			Results.Throughput t = run.throughput();
			md.append(String.format(Locale.ROOT, "| %d | %.0f | %.2f | %.2f | %s | %s | %d |%n", run.permits(),
					t.perSecond(), t.waitP50Millis(), t.waitP99Millis(), cost(t.cpuMicrosPerOp(), "%.1f"),
					cost(t.allocatedBytesPerOp(), "%.0f"), run.mostInside()));
		}
		md.append('\n');
		IdempotencyScenario.Result idem = this.results.idempotency;
		if (idem != null) {
			md.append("## 11. Idempotency keys\n\nOne thread on new and completed keys, then bursts of "
					+ idem.burstThreads() + " threads on one new key: " + idem.executions() + " executions in "
					+ idem.bursts() + " bursts (exactly one each: " + ((idem.executions() == idem.bursts()) ? "yes" : "**no**")
					+ ").\n\n| call | calls | p50, ms | p99, ms | CPU µs/op | allocated B/op |\n|---|---|---|---|---|---|\n");
			for (Object[] row : new Object[][] { { "first call (new key)", idem.firstCall() },
					{ "duplicate (recorded outcome)", idem.duplicate() }, { "LEASE lock execute", idem.leaseLock() },
					{ "burst of " + idem.burstThreads() + " duplicates, until the last has the outcome",
							idem.burstLatency() } }) {
				Samples samples = (Samples) row[1];
				md.append(String.format(Locale.ROOT, "| %s | %d | %.2f | %.2f | %s | %s |%n", row[0], samples.size(),
						samples.percentileMillis(50), samples.percentileMillis(99),
						cost(samples.cpuMicrosPerOp(), "%.1f"), cost(samples.allocatedBytesPerOp(), "%.0f")));
			}
			md.append('\n');
		}
	}

	private void scenario12(StringBuilder md) {
		CommitValidationScenario.Result cv = this.results.commitValidation;
		if (cv == null) {
			return;
		}
		md.append(String.format(Locale.ROOT, "## 12. Commit-time validation%n%nA LEASE lock around a one-row "
				+ "transaction, `validate-at-commit` on (the default: one `SELECT … FOR UPDATE` of the lock row before "
				+ "the commit) and off, interleaved: on / off is %s at the median (%+.0f µs). Latency in µs.%n%n",
				ratio(micros(cv.onCycle(), 50) / micros(cv.offCycle(), 50)),
				micros(cv.onCycle(), 50) - micros(cv.offCycle(), 50)));
		md.append("| unit | validate-at-commit | p50 µs | p99 µs | CPU µs/op | allocated B/op | samples |\n"
				+ "|---|---|---|---|---|---|---|\n");
		for (Object[] row : new Object[][] { { "lock + transaction + release", "on", cv.onCycle() },
				{ "lock + transaction + release", "off", cv.offCycle() },
				{ "the transaction alone (begin, write, commit)", "on", cv.onTransaction() },
				{ "the transaction alone (begin, write, commit)", "off", cv.offTransaction() },
				{ "the same transaction, no lock", "–", cv.noLock() } }) {
			Samples samples = (Samples) row[2];
			md.append(String.format(Locale.ROOT, "| %s | %s | %.0f | %.0f | %s | %s | %d |%n", row[0], row[1],
					micros(samples, 50), micros(samples, 99), cost(samples.cpuMicrosPerOp(), "%.1f"),
					cost(samples.allocatedBytesPerOp(), "%.0f"), samples.size()));
		}
		md.append('\n');
	}

	private static double micros(Samples samples, double percentile) {
		return samples.percentileMillis(percentile) * 1000;
	}

	private static String shedLockVersion() {
		try (var in = Report.class
			.getResourceAsStream("/META-INF/maven/net.javacrumbs.shedlock/shedlock-provider-jdbc-template/pom.properties")) {
			java.util.Properties properties = new java.util.Properties();
			if (in != null) {
				properties.load(in);
			}
			return properties.getProperty("version", "(version unknown)");
		}
		catch (IOException ex) {
			return "(version unknown)";
		}
	}

	private static String ratio(double value) {
		return String.format(Locale.ROOT, "%.2f ×", value);
	}

	Results results() {
		return this.results;
	}

}
