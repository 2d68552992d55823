package io.github.dblock.test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestPlan;

/**
 * Collects the figures of the fault-injection tests (acquisitions, violations, kills, recovery times, restarts,
 * bad inputs) while they run, and writes them as Markdown when the test plan ends.
 * <p>
 * Tests call {@link #count} and {@link #sample}; they still assert on what they measure themselves, this only
 * reports. The report goes to {@code target/reliability-report.md} of the module, and also to the path in the
 * system property {@code lock.reliability.report} when set (the {@code reliability} Maven profile points it at
 * {@code docs/reliability/fault-injection.md}). {@link #scale()} multiplies the tests' workloads: 1 in the normal build, larger
 * in the heavy profile ({@code lock.reliability.scale}).
 * <p>
 * Registered as a JUnit Platform {@link TestExecutionListener} through {@code META-INF/services}; thread-safe.
 */
public final class Reliability implements TestExecutionListener {

	/** Row label for figures that belong to no single lock mode. */
	public static final String ALL_MODES = "all modes";

	private static final Map<String, Map<String, AtomicLong>> counts = new TreeMap<>();

	private static final Map<String, Map<String, List<Long>>> samples = new TreeMap<>();

	private static final Map<String, String> settings = new LinkedHashMap<>();

	/** Adds {@code n} to the counter {@code metric} of {@code mode} (a lock mode's name or {@link #ALL_MODES}). */
	public static synchronized void count(String mode, String metric, long n) {
		counts.computeIfAbsent(mode, (m) -> new TreeMap<>()).computeIfAbsent(metric, (m) -> new AtomicLong()).addAndGet(n);
	}

	/** Records one measurement, in milliseconds, of {@code metric} (for example a recovery time) for {@code mode}. */
	public static synchronized void sample(String mode, String metric, long millis) {
		samples.computeIfAbsent(mode, (m) -> new TreeMap<>()).computeIfAbsent(metric, (m) -> new ArrayList<>()).add(millis);
	}

	/** Records how a part of the suite was run (processes, threads, iterations), shown above the tables. */
	public static synchronized void setting(String name, String value) {
		settings.put(name, value);
	}

	/** The workload multiplier: {@code lock.reliability.scale}, at least 1, default 1. */
	public static int scale() {
		String value = System.getProperty("lock.reliability.scale");
		try {
			return (value == null || value.isBlank()) ? 1 : Math.max(1, Integer.parseInt(value.trim()));
		}
		catch (NumberFormatException ex) { // an unset Maven property arrives as its own ${…} expression
			return 1;
		}
	}

	@Override
	public void testPlanExecutionFinished(TestPlan testPlan) {
		String markdown;
		synchronized (Reliability.class) {
			if (counts.isEmpty() && samples.isEmpty()) {
				return;
			}
			addEarlierModules(property("lock.reliability.figures"), property("lock.reliability.run"));
			markdown = render();
		}
		Reports.publish("reliability report", markdown, "reliability-report.md", "lock.reliability.report");
	}

	private static String property(String name) {
		String value = System.getProperty(name, "");
		return value.startsWith("${") ? "" : value.trim(); // an unset Maven property arrives as ${…}
	}

	/**
	 * One Maven run writes one report although each module's tests run in a JVM of their own: this JVM adds the
	 * figures that earlier modules of the same run ({@code run}) left in {@code file}, and leaves the sum there for
	 * the next module. With either blank (the normal build) nothing is read or written.
	 * @throws UncheckedIOException if the file cannot be read or written
	 */
	static void addEarlierModules(String file, String run) {
		if (file.isEmpty() || run.isEmpty()) {
			return;
		}
		Path path = Path.of(file);
		try {
			List<String> lines = Files.exists(path) ? Files.readAllLines(path, StandardCharsets.UTF_8) : List.of();
			if (!lines.isEmpty() && lines.get(0).equals("run\t" + run)) {
				for (String line : lines.subList(1, lines.size())) {
					String[] f = line.split("\t", -1);
					switch (f[0]) {
						case "count" -> count(f[1], f[2], Long.parseLong(f[3]));
						case "sample" -> sample(f[1], f[2], Long.parseLong(f[3]));
						case "setting" -> settings.putIfAbsent(f[1], f[2]);
						default -> throw new IllegalStateException("Unknown line in " + path + ": " + line);
					}
				}
			}
			List<String> out = new ArrayList<>();
			out.add("run\t" + run);
			counts.forEach((mode, metrics) -> metrics.forEach((metric, n) -> out.add(String.join("\t", "count", field(mode), field(metric), String.valueOf(n.get())))));
			samples.forEach((mode, metrics) -> metrics.forEach((metric, values) -> values
				.forEach((v) -> out.add(String.join("\t", "sample", field(mode), field(metric), String.valueOf(v))))));
			settings.forEach((name, value) -> out.add(String.join("\t", "setting", field(name), field(value))));
			if (path.getParent() != null) {
				Files.createDirectories(path.getParent());
			}
			Files.write(path, out, StandardCharsets.UTF_8);
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
	}

	private static String field(String text) {
		return text.replace('\t', ' ').replace('\n', ' ');
	}

	static String render() {
		StringBuilder md = new StringBuilder();
		md.append("# Fault injection: the figures of one run\n\n");
		md.append("Generated by the fault-injection tests of `lock-system-tests`; do not edit by hand. Regenerate with\n\n");
		md.append("```shell\n./mvnw -pl lock-system-tests -am verify -Preliability\n```\n\n");
		md.append("(about seven minutes on 2 cores; `./mvnw verify` runs the same tests at scale 1 and writes ")
			.append("`lock-system-tests/target/reliability-report.md`). Every figure below was measured in one run; ")
			.append("the tests assert the exact outcomes (no violations, every acquisition accounted for) and fail ")
			.append("the build otherwise.\n\n");
		md.append("## Run\n\n| setting | value |\n|---|---|\n");
		settings.put("scale", String.valueOf(scale()));
		settings.put("processors", String.valueOf(Runtime.getRuntime().availableProcessors()));
		settings.put("java", System.getProperty("java.version"));
		settings.forEach((k, v) -> md.append("| ").append(k).append(" | ").append(v).append(" |\n"));
		List<String> modes = new ArrayList<>(counts.keySet());
		samples.keySet().stream().filter((m) -> !modes.contains(m)).forEach(modes::add);
		Collections.sort(modes);
		for (String mode : modes) {
			md.append("\n## ").append(mode).append("\n\n| figure | value |\n|---|---|\n");
			counts.getOrDefault(mode, Map.of())
				.forEach((metric, n) -> md.append("| ").append(metric).append(" | ").append(n.get()).append(" |\n"));
			samples.getOrDefault(mode, Map.of()).forEach((metric, values) -> {
				List<Long> sorted = new ArrayList<>(values);
				Collections.sort(sorted);
				md.append("| ").append(metric).append(" (ms) | ").append(summary(sorted)).append(" |\n");
			});
		}
		return md.toString();
	}

	private static String summary(List<Long> sorted) {
		if (sorted.isEmpty()) {
			return "none";
		}
		long median = sorted.get(sorted.size() / 2);
		return "n=" + sorted.size() + ", min " + sorted.get(0) + ", median " + median + ", max "
				+ sorted.get(sorted.size() - 1);
	}

}
