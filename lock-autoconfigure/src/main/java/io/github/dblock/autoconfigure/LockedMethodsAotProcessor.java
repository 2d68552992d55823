package io.github.dblock.autoconfigure;

import java.lang.annotation.Annotation;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;

import io.github.dblock.DistributedLock;
import io.github.dblock.idempotency.Idempotent;
import io.github.dblock.semaphore.DistributedSemaphore;
import org.jspecify.annotations.Nullable;
import org.springframework.aot.hint.BindingReflectionHintsRegistrar;
import org.springframework.aot.hint.ExecutableMode;
import org.springframework.aot.hint.RuntimeHints;
import org.springframework.beans.factory.aot.BeanRegistrationAotContribution;
import org.springframework.beans.factory.aot.BeanRegistrationAotProcessor;
import org.springframework.beans.factory.support.RegisteredBean;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.core.annotation.AnnotationUtils;
import org.springframework.util.ClassUtils;
import org.springframework.util.ReflectionUtils;

/**
 * Registers, at build time, the GraalVM native-image hints of the application's beans that have
 * {@link DistributedLock @DistributedLock}, {@link DistributedSemaphore @DistributedSemaphore} or
 * {@link Idempotent @Idempotent} methods, which the starter reads reflectively at run time:
 * <ul>
 * <li>the bean class's declared methods, which start-up lists to find the annotated ones and check them;</li>
 * <li>each annotated method, with its parameter names, for the {@code #name} variables of the resource and key
 * expressions;</li>
 * <li>the method's parameter types for data binding (their getters, fields and record accessors, and those of the
 * types they return), which SpEL expressions such as {@code #{#order.id}} call reflectively;</li>
 * <li>an {@code @Idempotent} method's return type for data binding: the outcome is recorded and replayed as JSON by
 * Jackson.</li>
 * </ul>
 * Expressions that call other beans ({@code #{@keys.of(#order)}}) reach methods this cannot see: register those with
 * {@code @RegisterReflection} or a {@code RuntimeHintsRegistrar} of the application. Registered in
 * {@code META-INF/spring/aot.factories}. Stateless and thread-safe.
 */
public class LockedMethodsAotProcessor implements BeanRegistrationAotProcessor {

	private static final List<Class<? extends Annotation>> ANNOTATIONS = List.of(DistributedLock.class,
			DistributedSemaphore.class, Idempotent.class);

	@Override
	public @Nullable BeanRegistrationAotContribution processAheadOfTime(RegisteredBean registeredBean) {
		Class<?> beanClass = ClassUtils.getUserClass(registeredBean.getBeanClass());
		List<Method> methods = annotatedMethods(beanClass);
		if (methods.isEmpty()) {
			return null;
		}
		return (generationContext, code) -> registerHints(generationContext.getRuntimeHints(), beanClass, methods);
	}

	/** The hints of one bean class whose annotated methods are {@code methods}. */
	static void registerHints(RuntimeHints hints, Class<?> beanClass, List<Method> methods) {
		hints.reflection().registerType(beanClass); // a type hint includes the introspection of its methods
		BindingReflectionHintsRegistrar binding = new BindingReflectionHintsRegistrar();
		for (Method method : methods) {
			hints.reflection().registerMethod(method, ExecutableMode.INVOKE);
			binding.registerReflectionHints(hints.reflection(), method.getGenericParameterTypes());
			if (AnnotatedElementUtils.hasAnnotation(method, Idempotent.class)) {
				binding.registerReflectionHints(hints.reflection(), method.getGenericReturnType());
			}
		}
	}

	/** The methods of a class (its superclasses' and interfaces' included) that carry one of the annotations. */
	static List<Method> annotatedMethods(Class<?> type) {
		if (!AnnotationUtils.isCandidateClass(type, ANNOTATIONS)) {
			return List.of();
		}
		List<Method> methods = new ArrayList<>();
		ReflectionUtils.doWithMethods(type, methods::add, (method) -> !method.isSynthetic() && !method.isBridge()
				&& ANNOTATIONS.stream().anyMatch((annotation) -> AnnotatedElementUtils.hasAnnotation(method, annotation)));
		return methods;
	}

}
