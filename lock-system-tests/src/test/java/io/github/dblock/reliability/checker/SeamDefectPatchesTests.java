package io.github.dblock.reliability.checker;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The patches of {@code src/test/seam-defects/} (docs/RELIABILITY.md, "Replaying a defect") still apply to the code:
 * every hunk's old lines (context and removed lines) stand, in order and together, in the file it names. A
 * refactoring that moves or rewrites that code fails this test, so that the patch is made again instead of rotting.
 */
class SeamDefectPatchesTests {

	/** The module's directory: Surefire runs the tests there. */
	private static final Path MODULE = Path.of("").toAbsolutePath();

	private static final Path PATCHES = MODULE.resolve("src/test/seam-defects");

	static Stream<Path> patches() throws IOException {
		List<Path> patches;
		try (Stream<Path> files = Files.list(PATCHES)) {
			patches = files.filter((p) -> p.toString().endsWith(".patch")).sorted().toList();
		}
		assertThat(patches).as("patches in %s", PATCHES).isNotEmpty();
		return patches.stream();
	}

	@ParameterizedTest
	@MethodSource("patches")
	void everyHunkStandsInItsFile(Path patch) throws IOException {
		List<String> lines = Files.readAllLines(patch, StandardCharsets.UTF_8);
		Path root = MODULE.getParent();
		Path file = null;
		List<String> old = null;
		int hunks = 0;
		for (String line : lines) {
			if (line.startsWith("--- a/")) {
				file = root.resolve(line.substring("--- a/".length()));
			}
			else if (line.startsWith("@@")) {
				check(patch, file, old);
				old = new ArrayList<>();
				hunks++;
			}
			else if (old != null && (line.startsWith(" ") || line.startsWith("-")) && !line.startsWith("--- ")) {
				old.add(line.substring(1));
			}
			else if (line.startsWith("diff --git")) {
				check(patch, file, old);
				old = null;
			}
		}
		check(patch, file, old);
		assertThat(hunks).as("hunks in %s", patch.getFileName()).isPositive();
	}

	private static void check(Path patch, Path file, List<String> old) throws IOException {
		if (old == null) {
			return;
		}
		assertThat(file).as("the file of a hunk of %s", patch.getFileName()).isNotNull().exists();
		String text = String.join("\n", Files.readAllLines(file, StandardCharsets.UTF_8));
		assertThat(text).as("%s: a hunk's old lines in %s (make the patch again against the code)",
				patch.getFileName(), MODULE.getParent().relativize(file)).contains(String.join("\n", old));
	}

}
