package io.github.dblock.semaphore;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

import io.github.dblock.DistributedLock;
import org.springframework.core.annotation.AliasFor;

/**
 * Runs the annotated method of a Spring bean while holding one permit of a distributed semaphore (see
 * {@link SemaphoreTemplate}): at most N calls run at once across every node, N being the semaphore's permit count
 * ({@code distributed-lock.semaphores.<name>.permits}, or {@link SemaphoreTemplate#setPermits} at run time).
 * <p>
 * The permit is taken before the method's own {@code @Transactional} transaction begins and given back after it
 * ends (the semaphore advisor has the order of the {@code @DistributedLock} advisor,
 * {@code distributed-lock.interceptor.order}); inside a caller's transaction it is given back when that transaction
 * completes. When every permit stays held for the whole wait time the method does not run and
 * {@link PermitNotAcquiredException} is thrown.
 * <p>
 * The {@link #name() name} is a template like {@link DistributedLock#resource()}: literal text, {@code #{...}} SpEL
 * over the arguments and {@code ${...}} placeholders. Each call takes its own permit: a method that calls itself (or
 * another method of the same semaphore) through the proxy holds two permits. A parameter of type {@link PermitHandle}
 * passed as {@code null} is filled in with the held permit (for its fencing token).
 * <pre class="code">
 * &#64;DistributedSemaphore(name = "partner-api", waitTime = "10s")
 * public Quote fetchQuote(String sku) { ... }
 * </pre>
 * Misuse fails start-up naming the method: a blank name, an unparsable expression or duration, or a method the
 * proxy cannot intercept (private, static, final, of a final class, missing from a JDK proxy's interfaces).
 * Calls from within the same bean bypass the proxy and take no permit; that cannot be detected.
 */
@Target({ ElementType.METHOD, ElementType.ANNOTATION_TYPE })
@Retention(RetentionPolicy.RUNTIME)
@Inherited
@Documented
public @interface DistributedSemaphore {

	/** Alias for {@link #name()}. */
	@AliasFor("name")
	String value() default "";

	/** The semaphore name template: literal text, {@code #{...}} SpEL and {@code ${...}} placeholders. */
	@AliasFor("value")
	String name() default "";

	/**
	 * How long to wait for a permit, as a duration ({@code "500ms"}, {@code "10s"}, {@code "PT1M"}; {@code "0"} for
	 * one attempt); blank for {@code distributed-lock.wait-time}.
	 */
	String waitTime() default "";

	/**
	 * The permit's lease on the database server's clock, without renewal; blank for the default lease
	 * ({@code distributed-lock.lease-time}), renewed every third of it while the method runs.
	 */
	String leaseTime() default "";

}
