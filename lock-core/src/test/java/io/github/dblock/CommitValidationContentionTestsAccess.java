package io.github.dblock;

/** Lets tests of other packages append to {@code target/commit-validation-measurements.txt}. */
public final class CommitValidationContentionTestsAccess {

	private CommitValidationContentionTestsAccess() {
	}

	public static void record(String text) {
		CommitValidationContentionTests.Measurements.record(text);
	}

}
