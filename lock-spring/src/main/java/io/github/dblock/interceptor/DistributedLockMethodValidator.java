package io.github.dblock.interceptor;

import java.lang.annotation.Annotation;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

import io.github.dblock.DistributedLock;
import io.github.dblock.LockTemplate;
import io.github.dblock.idempotency.Idempotent;
import org.jspecify.annotations.Nullable;
import org.springframework.aop.config.AopConfigUtils;
import org.springframework.aop.framework.AopProxyUtils;
import org.springframework.aop.framework.ProxyConfig;
import org.springframework.aop.framework.autoproxy.AutoProxyUtils;
import org.springframework.aop.support.AopUtils;
import org.springframework.beans.BeansException;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.BeanFactoryAware;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.core.annotation.AnnotationUtils;
import org.springframework.util.ClassUtils;
import org.springframework.util.ReflectionUtils;

/**
 * Stops start-up when a method carrying its annotation ({@link DistributedLock} by default; one instance each for
 * {@link io.github.dblock.semaphore.DistributedSemaphore} and {@link Idempotent}) cannot be intercepted, because an annotation
 * that silently does nothing is the worst outcome: the method would run without exclusion. Spring AOP proxies only intercept
 * calls made through the proxy to methods the proxy can override or forward, so it checks every bean with
 * annotated methods:
 * <ul>
 * <li>private and static methods: never intercepted;</li>
 * <li>final methods and final classes with class-based (CGLIB) proxies, the default: a subclass cannot override
 * them (a final class is refused before Spring tries and fails to subclass it);</li>
 * <li>with interface-based (JDK) proxies ({@code spring.aop.proxy-target-class=false}): methods that no
 * interface of the proxy declares;</li>
 * <li>beans that were not proxied at all, for example because they were created before the auto-proxy creator
 * (a dependency of a {@code BeanPostProcessor}).</li>
 * </ul>
 * An {@link Idempotent} method also needs Jackson 3 on the class path (outcomes are recorded as JSON; without it the
 * idempotency beans are not configured). It also checks, once all singletons exist, that an annotation's {@code minHoldTime} without a
 * {@code leaseTime} of its own does not exceed the configured default lease time, and that a READ or WRITE
 * annotation without a mode of its own runs with a default mode of LEASE. Calls from within the same
 * object (self-invocation) cannot be detected this way and are documented instead.
 * <p>
 * The failure is an {@link IneffectiveAnnotationException} naming the method, the reason and what to do, which
 * Spring Boot reports as a failure analysis (Description / Action). Thread-safe.
 */
public class DistributedLockMethodValidator implements BeanPostProcessor, SmartInitializingSingleton, BeanFactoryAware {

	private final Supplier<LockAttributeSource> attributeSource;

	/** The annotation whose methods are checked. */
	private final Class<? extends Annotation> annotationType;

	private final Supplier<@Nullable LockTemplate> lockTemplate;

	/** Annotated methods per user class (empty list: none). */
	private final Map<Class<?>, List<Method>> annotated = new ConcurrentHashMap<>();

	/** Annotations whose minimum hold must be compared with the default lease once the template exists. */
	private final Map<Method, LockAttribute> minHoldChecks = new ConcurrentHashMap<>();

	/** READ or WRITE annotations without a mode of their own: the default mode must be LEASE. */
	private final Map<Method, LockAttribute> readWriteChecks = new ConcurrentHashMap<>();

	@Nullable
	private BeanFactory beanFactory;

	/**
	 * @param attributeSource parses the annotations (looked up lazily)
	 * @param lockTemplate the template whose default lease time bounds minimum hold times; may supply {@code null}
	 */
	public DistributedLockMethodValidator(Supplier<LockAttributeSource> attributeSource,
			Supplier<@Nullable LockTemplate> lockTemplate) {
		this(DistributedLock.class, attributeSource, lockTemplate);
	}

	/**
	 * A validator for methods carrying another annotation that works through a Spring AOP proxy in the same way, such
	 * as {@link io.github.dblock.semaphore.DistributedSemaphore}; the minimum-hold check applies to {@link DistributedLock} only.
	 * @param annotationType the annotation whose methods must be interceptable
	 * @param attributeSource parses {@link DistributedLock} annotations (looked up lazily)
	 * @param lockTemplate the template whose default lease time bounds minimum hold times; may supply {@code null}
	 */
	public DistributedLockMethodValidator(Class<? extends Annotation> annotationType,
			Supplier<LockAttributeSource> attributeSource, Supplier<@Nullable LockTemplate> lockTemplate) {
		this.annotationType = annotationType;
		this.attributeSource = attributeSource;
		this.lockTemplate = lockTemplate;
	}

	@Override
	public void setBeanFactory(BeanFactory beanFactory) {
		this.beanFactory = beanFactory;
	}

	@Override
	public Object postProcessBeforeInitialization(Object bean, String beanName) throws BeansException {
		Class<?> type = ClassUtils.getUserClass(bean);
		List<Method> methods = annotatedMethods(type);
		if (!methods.isEmpty() && Modifier.isFinal(type.getModifiers()) && usesClassProxy(beanName)) {
			throw failure(methods.get(0), "its class " + type.getName() + " is final, so Spring cannot create the "
					+ "class-based (CGLIB) proxy that takes the lock", "Remove 'final' from the class");
		}
		return bean;
	}

	@Override
	public Object postProcessAfterInitialization(Object bean, String beanName) throws BeansException {
		Class<?> type = AopProxyUtils.ultimateTargetClass(bean);
		List<Method> methods = annotatedMethods(type);
		if (methods.isEmpty() || type.getName().contains("$MockitoMock$")) {
			return bean; // a test's mock of a locked bean stands in for it on purpose
		}
		for (Method method : methods) {
			check(bean, beanName, method);
			LockAttribute attribute = (this.annotationType == DistributedLock.class)
					? this.attributeSource.get().getLockAttribute(method, type) : null;
			if (attribute != null && attribute.getOptions().getMinHoldTime() != null
					&& attribute.getOptions().getLeaseTime() == null) {
				this.minHoldChecks.put(method, attribute);
			}
			if (attribute != null && attribute.getOptions().getType() != io.github.dblock.LockType.EXCLUSIVE
					&& attribute.getOptions().getMode() == null) {
				this.readWriteChecks.put(method, attribute);
			}
		}
		return bean;
	}

	private void check(Object bean, String beanName, Method method) {
		if (this.annotationType == Idempotent.class && !ClassUtils.isPresent(
				"tools.jackson.databind.json.JsonMapper", (this.beanFactory instanceof ConfigurableListableBeanFactory listable)
						? listable.getBeanClassLoader() : getClass().getClassLoader())) {
			throw failure(method, "idempotency keys record outcomes as JSON with Jackson 3, which is not on the class "
					+ "path", "Add tools.jackson.core:jackson-databind (the lock starter brings it)");
		}
		int modifiers = method.getModifiers();
		if (Modifier.isPrivate(modifiers)) {
			throw failure(method, "the method is private, and Spring AOP proxies never intercept private methods",
					"Make it public (or protected or package-private) and call it on the bean from another bean");
		}
		if (Modifier.isStatic(modifiers)) {
			throw failure(method, "the method is static, and Spring AOP proxies only intercept instance methods",
					"Make it an instance method and call it on the bean from another bean");
		}
		if (AopUtils.isJdkDynamicProxy(bean)) {
			if (!declaredByInterface(bean, method)) {
				throw failure(method, "bean '" + beanName + "' has an interface-based (JDK) proxy, which only "
						+ "intercepts methods of its interfaces " + List.of(AopProxyUtils.proxiedUserInterfaces(bean))
						+ ", and none declares this method", "Declare it in an interface, or use class-based proxies "
						+ "(spring.aop.proxy-target-class=true, the default)");
			}
			return;
		}
		if (!AopUtils.isAopProxy(bean)) {
			throw failure(method, "bean '" + beanName + "' was not proxied by Spring AOP, typically because it was "
					+ "created before the auto-proxy creator (for example as a dependency of a BeanPostProcessor)",
					"Inject it lazily there (ObjectProvider or @Lazy)");
		}
		if (Modifier.isFinal(modifiers)) {
			throw failure(method, "the method is final, so the class-based (CGLIB) proxy cannot override it and calls "
					+ "go straight to the method", "Remove 'final'");
		}
	}

	private static boolean declaredByInterface(Object proxy, Method method) {
		for (Class<?> type : AopProxyUtils.proxiedUserInterfaces(proxy)) {
			if (ClassUtils.hasMethod(type, method.getName(), method.getParameterTypes())) {
				return true;
			}
		}
		return false;
	}

	/**
	 * Whether the auto-proxy creator will proxy this bean by subclassing: configured globally, or asked for by the
	 * bean definition.
	 */
	private boolean usesClassProxy(String beanName) {
		BeanFactory factory = this.beanFactory;
		if (factory == null) {
			return true;
		}
		if (factory instanceof ConfigurableListableBeanFactory listable
				&& AutoProxyUtils.shouldProxyTargetClass(listable, beanName)) {
			return true;
		}
		if (factory.containsBean(AopConfigUtils.AUTO_PROXY_CREATOR_BEAN_NAME)) {
			Object creator = factory.getBean(AopConfigUtils.AUTO_PROXY_CREATOR_BEAN_NAME);
			return creator instanceof ProxyConfig config && config.isProxyTargetClass();
		}
		return true;
	}

	@Override
	public void afterSingletonsInstantiated() {
		LockTemplate template = this.lockTemplate.get();
		if (template == null) {
			return;
		}
		if (template.getDefaultMode() != io.github.dblock.LockMode.LEASE) {
			for (Map.Entry<Method, LockAttribute> entry : this.readWriteChecks.entrySet()) {
				throw failure(entry.getKey(), "its type " + entry.getValue().getOptions().getType() + " needs LEASE "
						+ "mode, but it has no mode of its own and distributed-lock.mode is " + template.getDefaultMode(),
						"Give mode = LockMode.LEASE on the annotation");
			}
		}
		Duration lease = template.getDefaultLeaseTime();
		for (Map.Entry<Method, LockAttribute> entry : this.minHoldChecks.entrySet()) {
			Duration minHold = entry.getValue().getOptions().getMinHoldTime();
			if (minHold != null && minHold.compareTo(lease) > 0) {
				throw failure(entry.getKey(), "its minHoldTime " + minHold + " exceeds the default lease time " + lease
						+ " (distributed-lock.lease-time) that it runs with, having no leaseTime of its own",
						"Give a leaseTime of at least the minHoldTime");
			}
		}
	}

	private IneffectiveAnnotationException failure(Method method, String reason, String action) {
		return new IneffectiveAnnotationException(this.annotationType, method, reason, action);
	}

	private List<Method> annotatedMethods(Class<?> type) {
		return this.annotated.computeIfAbsent(type, (key) -> {
			if (!AnnotationUtils.isCandidateClass(key, this.annotationType)) {
				return List.of();
			}
			List<Method> methods = new ArrayList<>();
			ReflectionUtils.doWithMethods(key, methods::add,
					(method) -> ReflectionUtils.USER_DECLARED_METHODS.matches(method)
							&& AnnotatedElementUtils.hasAnnotation(method, this.annotationType));
			return List.copyOf(methods);
		});
	}

}
