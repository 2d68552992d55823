package io.github.dblock.autoconfigure;

import java.lang.annotation.Annotation;
import java.lang.reflect.Method;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

import io.github.dblock.DistributedLock;
import io.github.dblock.idempotency.Idempotent;
import io.github.dblock.interceptor.DistributedLockAdvisor;
import io.github.dblock.semaphore.DistributedSemaphore;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Role;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.core.annotation.AnnotationUtils;
import org.springframework.core.env.Environment;
import org.springframework.util.ClassUtils;
import org.springframework.util.ReflectionUtils;

/**
 * Applies when {@link DistributedLockAutoConfiguration} did not ({@code distributed-lock.enabled=false}, no
 * {@code DataSource} bean, or Flyway missing): the {@link DistributedLock @DistributedLock},
 * {@link DistributedSemaphore @DistributedSemaphore} and {@link Idempotent @Idempotent} annotations then have no
 * advisor and their methods run without a lock. Once every singleton exists it logs one WARN naming every such
 * method of every bean and why, so that switching locking off is never silent. It changes no behaviour.
 */
@AutoConfiguration(after = DistributedLockAutoConfiguration.class)
@ConditionalOnMissingBean(DistributedLockAdvisor.class)
public final class UnlockedMethodsAutoConfiguration {

	@Bean
	@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
	static UnlockedMethodsWarning distributedLockUnlockedMethodsWarning(ListableBeanFactory beanFactory,
			Environment environment) {
		return new UnlockedMethodsWarning(beanFactory, environment);
	}

	/**
	 * Logs, once all singletons exist, one WARN listing the annotated methods that run without a lock because
	 * locking is not configured. Logs nothing when there are none. Not thread-safe; called once by the container.
	 */
	public static final class UnlockedMethodsWarning implements SmartInitializingSingleton {

		private static final Log logger = LogFactory.getLog(UnlockedMethodsWarning.class);

		private static final List<Class<? extends Annotation>> ANNOTATIONS = List.of(DistributedLock.class,
				DistributedSemaphore.class, Idempotent.class);

		private final ListableBeanFactory beanFactory;

		private final Environment environment;

		UnlockedMethodsWarning(ListableBeanFactory beanFactory, Environment environment) {
			this.beanFactory = beanFactory;
			this.environment = environment;
		}

		@Override
		public void afterSingletonsInstantiated() {
			Set<String> methods = unlockedMethods();
			if (methods.isEmpty()) {
				return;
			}
			logger.warn(methods.size() + " annotated method(s) run WITHOUT a distributed lock, semaphore or "
					+ "idempotency key because " + reason() + ": " + String.join(", ", methods)
					+ ". Calls proceed unguarded and nothing else is logged.");
		}

		/** Why the lock auto-configuration did not apply, as a user can act on it. */
		String reason() {
			if (!this.environment.getProperty(DistributedLockProperties.PREFIX + ".enabled", Boolean.class, true)) {
				return DistributedLockProperties.PREFIX + ".enabled=false";
			}
			return "distributed locks are not configured (they need a DataSource bean and Flyway on the class path; "
					+ "the auto-configuration report, --debug, says which was missing)";
		}

		/** The annotated methods of every bean, as {@code Type.method(ParamType, ...) @Annotation}, sorted. */
		Set<String> unlockedMethods() {
			Set<String> found = new TreeSet<>();
			for (String name : this.beanFactory.getBeanDefinitionNames()) {
				Class<?> type = this.beanFactory.getType(name, false);
				if (type == null) {
					continue;
				}
				type = ClassUtils.getUserClass(type);
				for (Class<? extends Annotation> annotation : ANNOTATIONS) {
					if (!AnnotationUtils.isCandidateClass(type, annotation)) {
						continue;
					}
					ReflectionUtils.doWithMethods(type, (method) -> found.add(describe(method, annotation)),
							(method) -> ReflectionUtils.USER_DECLARED_METHODS.matches(method)
									&& AnnotatedElementUtils.hasAnnotation(method, annotation));
				}
			}
			return found;
		}

		private static String describe(Method method, Class<? extends Annotation> annotation) {
			StringBuilder parameters = new StringBuilder();
			for (Class<?> parameter : method.getParameterTypes()) {
				parameters.append((parameters.length() > 0) ? ", " : "").append(parameter.getSimpleName());
			}
			return method.getDeclaringClass().getName() + "." + method.getName() + "(" + parameters + ") @"
					+ annotation.getSimpleName();
		}

	}

}
