package io.github.dblock.autoconfigure;

import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * Settings of the Actuator {@code locks} endpoint.
 */
@ConfigurationProperties(DistributedLockEndpointProperties.PREFIX)
public class DistributedLockEndpointProperties {

	/** The prefix of these properties. */
	public static final String PREFIX = DistributedLockProperties.PREFIX + ".endpoint";

	private final ForceRelease forceRelease = new ForceRelease();

	public ForceRelease getForceRelease() {
		return this.forceRelease;
	}

	/** The operation that forces a lock free. */
	public static class ForceRelease {

		/**
		 * Whether the locks endpoint offers DELETE /actuator/locks/{resource}, which frees a lock whatever its
		 * owner and advances its fencing token.
		 */
		private boolean enabled;

		public boolean isEnabled() {
			return this.enabled;
		}

		public void setEnabled(boolean enabled) {
			this.enabled = enabled;
		}

	}

}
