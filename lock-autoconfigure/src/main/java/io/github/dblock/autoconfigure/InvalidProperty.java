package io.github.dblock.autoconfigure;

import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;

/**
 * The failure of a {@code distributed-lock.*} property found invalid at start-up, for {@link DistributedLockProperties}
 * and its groups' checks. Stateless.
 */
final class InvalidProperty {

	/** The prefix of every property. */
	static final String PREFIX = "distributed-lock";

	private InvalidProperty() {
	}

	/** The exception that names the property {@code distributed-lock.<name>}, its value and what is wrong with it. */
	static InvalidConfigurationPropertyValueException invalid(String name, @Nullable Object value, String reason) {
		return new InvalidConfigurationPropertyValueException(PREFIX + "." + name, value, reason);
	}

}
