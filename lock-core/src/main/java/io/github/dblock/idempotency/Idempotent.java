package io.github.dblock.idempotency;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

import io.github.dblock.DistributedLock;
import org.springframework.core.annotation.AliasFor;

/**
 * Runs the annotated method of a Spring bean at most once per idempotency key across all nodes; duplicate calls
 * wait for the first and get its recorded result (see {@link IdempotencyTemplate} for the algorithm and the
 * guarantees, including what happens when the first runner crashes mid-way).
 * <pre class="code">
 * &#64;Idempotent(key = "payment:#{#request.id}", retention = "7d")
 * &#64;Transactional
 * public Receipt pay(PaymentRequest request) { ... }
 * </pre>
 * The {@link #key() key} is a template like {@link DistributedLock#resource()}: literal text, {@code #{...}} SpEL over
 * the arguments ({@code #name}, {@code #p0}, {@code @bean}, {@code #root.method}) and {@code ${...}} placeholders.
 * <p>
 * The result is recorded as JSON and deserialized for duplicates to the method's generic return type (for example
 * {@code List<Receipt>}), so it must round-trip through the application's Jackson {@code JsonMapper}. For a
 * {@code void} method duplicates just return. An exception (checked or not) marks the key failed and propagates; the
 * next call runs the method again.
 * <p>
 * <b>Transactions.</b> The advisor runs inside the method's {@code @Transactional} transaction (its default order,
 * {@code distributed-lock.idempotency.order}, equals the transaction advisor's and it is registered after it), so
 * the recorded outcome commits together with the method's writes to the lock data source, and a rollback leaves the
 * key to be run again. The claim itself commits at once on a connection of its own. If the method is
 * {@code @Transactional} but no transaction is active when the advisor runs (it was ordered outside), the call fails
 * with {@link IllegalStateException} before anything is claimed.
 * <p>
 * Misuse fails clearly: a key that does not parse, an unparsable or out-of-range duration, or a method no proxy can
 * intercept (private, static, final, of a final class) fails start-up naming the method; a key expression that throws
 * or evaluates to {@code null} or blank fails the call with {@link IllegalArgumentException}. Calls from within the
 * same bean bypass the proxy and are not deduplicated. Reactive return types are not supported.
 *
 * @see IdempotencyTemplate
 */
@Target({ ElementType.METHOD, ElementType.ANNOTATION_TYPE })
@Retention(RetentionPolicy.RUNTIME)
@Inherited
@Documented
public @interface Idempotent {

	/** Alias for {@link #key()}. */
	@AliasFor("key")
	String value() default "";

	/** The idempotency key: a template with {@code #{...}} SpEL and {@code ${...}} placeholders. Required. */
	@AliasFor("value")
	String key() default "";

	/**
	 * How long the recorded outcome answers duplicates after the first call completed, as a duration string
	 * ({@code "24h"}, {@code "7d"}, {@code "PT1H"}; placeholders allowed); positive. Empty: the configured
	 * {@code distributed-lock.idempotency.retention}.
	 */
	String retention() default "";

	/**
	 * How long a duplicate waits for a running first call to complete, as a duration string; {@code "0"} for no wait.
	 * Empty: the configured {@code distributed-lock.wait-time}. At the end of it
	 * {@link IdempotencyInProgressException} is thrown.
	 */
	String waitTime() default "";

	/**
	 * The running lease, as a duration string, at least {@code "1s"}: renewed every third of it while the method
	 * runs, and how long duplicates wait before taking over the key of a runner that died. Empty: the configured
	 * {@code distributed-lock.idempotency.lease-time}.
	 */
	String leaseTime() default "";

	/**
	 * What a duplicate gets after the first call succeeded: the recorded outcome or {@link AlreadyProcessedException}.
	 * Give at most one; empty uses {@code distributed-lock.idempotency.on-duplicate}.
	 */
	OnDuplicate[] onDuplicate() default {};

}
