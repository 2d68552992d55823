package io.github.dblock.sample.embedded;

import ch.vorburger.exec.OutputStreamType;
import org.slf4j.event.Level;

/** Opens the package-private parts of {@link EmbeddedMariaDb} to the tests. */
public final class EmbeddedMariaDbSupport {

	private EmbeddedMariaDbSupport() {
	}

	public static String whatWentWrong(Throwable ex) {
		return EmbeddedMariaDb.whatWentWrong(ex);
	}

	public static Level level(String line) {
		return new EmbeddedMariaDb.ServerLogLevels().dispatch(OutputStreamType.STDERR, line);
	}

}
